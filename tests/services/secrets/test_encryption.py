"""Secrets sealed with AES-GCM: round trips, rotation, the name bound, and nothing leaked."""

import base64
import logging
import subprocess
import sys

import pytest

from shared.services.secrets.encryption import (CannotOpen, KeyConfigError, Sealed, SecretBox, new_key_entry)
from tests.conftest import ROOT

VALUE = {"password": "hunter2-very-secret", "nested": {"token": [1, 2, 3]}}


def test_a_value_opens_as_sealed_and_each_seal_differs():
    box = SecretBox.from_setting(new_key_entry("k1"))
    first, second = box.seal("project/db", VALUE), box.seal("project/db", VALUE)
    assert first.key_id == "k1" and first.ciphertext != second.ciphertext          # a fresh nonce each time
    assert box.open("project/db", first) == VALUE == box.open("project/db", second)
    assert "hunter2" not in base64.b64decode(first.ciphertext).decode(errors="replace")


def test_old_keys_open_and_the_newest_seals():
    old = new_key_entry("2025")
    sealed_before = SecretBox.from_setting(old).seal("s", VALUE)
    rotated = SecretBox.from_setting(f"{new_key_entry('2026')}, {old}")
    assert rotated.open("s", sealed_before) == VALUE and rotated.needs_resealing(sealed_before)
    resealed = rotated.seal("s", VALUE)
    assert resealed.key_id == "2026" and not rotated.needs_resealing(resealed)
    with pytest.raises(CannotOpen, match="key '2026', which is not configured"):
        SecretBox.from_setting(old).open("s", resealed)


def test_the_name_is_bound_and_an_altered_ciphertext_does_not_open():
    box = SecretBox.from_setting(new_key_entry("k1"))
    sealed = box.seal("project/a", VALUE)
    with pytest.raises(CannotOpen, match="altered, or another secret's"):
        box.open("project/b", sealed)
    raw = bytearray(base64.b64decode(sealed.ciphertext))
    raw[-1] ^= 1
    with pytest.raises(CannotOpen):
        box.open("project/a", Sealed("k1", base64.b64encode(bytes(raw)).decode()))
    with pytest.raises(CannotOpen):
        box.open("project/a", Sealed("k1", "not base64!"))


@pytest.mark.parametrize("setting, why", [
    ("", "no key"), ("k1", "not <keyId>:<base64 key>"), ("k1:***", "not base64"), ("k1:" + base64.b64encode(b"short").decode(), "5 bytes"),
    ("bad id:" + base64.b64encode(bytes(32)).decode(), "key id"),
    (f"k1:{base64.b64encode(bytes(32)).decode()},k1:{base64.b64encode(bytes(32)).decode()}", "twice"),
])
def test_a_bad_setting_is_refused_without_showing_a_key(setting, why):
    with pytest.raises(KeyConfigError, match=why) as refused:
        SecretBox.from_setting(setting)
    assert base64.b64encode(bytes(32)).decode() not in str(refused.value)


def test_nothing_secret_in_a_repr_an_error_or_a_log(caplog):
    entry = new_key_entry("k1")
    box = SecretBox.from_setting(entry)
    sealed = box.seal("s", VALUE)
    caplog.set_level(logging.DEBUG)
    logging.getLogger("test").info("state: %r %r", box, sealed)
    try:
        box.open("other", sealed)
    except CannotOpen as error:
        logging.getLogger("test").exception("failed: %s", error)
    shown = caplog.text + repr(box) + repr(sealed)
    assert "k1" in shown and entry.split(":")[1] not in shown
    assert "hunter2" not in shown and sealed.ciphertext not in shown


def test_a_new_key_entry_from_the_command_line_is_a_working_setting():
    printed = subprocess.run([sys.executable, "-m", "shared.services.secrets.encryption", "new-key", "2027"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    box = SecretBox.from_setting(printed)
    assert box.sealing_key_id == "2027" and box.open("x", box.seal("x", [1])) == [1]
