"""App settings: environment over local.settings.json "Values" over the host's defaults."""

import json
import os

import pytest

from devhost.settings import apply_to_environ, expand, load_settings, sample_values

NAMES = ("DH_FROM_DEFAULT", "DH_FROM_FILE", "DH_FROM_ENV")


@pytest.fixture
def clean_environ(monkeypatch):
    """None of the test's setting names in the environment, and put back as they were after."""
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def write_local_settings(app_dir, values: dict) -> None:
    (app_dir / "local.settings.json").write_text(json.dumps({"IsEncrypted": False, "Values": values}))


def test_environment_wins_over_file_which_wins_over_defaults(tmp_path, clean_environ):
    write_local_settings(tmp_path, {"DH_FROM_FILE": "file", "DH_FROM_ENV": "file"})
    clean_environ.setenv("DH_FROM_ENV", "env")
    defaults = {name: "default" for name in NAMES}

    settings = load_settings(tmp_path, defaults)

    assert settings["DH_FROM_DEFAULT"] == "default"
    assert settings["DH_FROM_FILE"] == "file"
    assert settings["DH_FROM_ENV"] == "env"


def test_without_local_settings_file(tmp_path, clean_environ):
    clean_environ.setenv("DH_FROM_ENV", "env")
    settings = load_settings(tmp_path, {"DH_FROM_DEFAULT": "default"})
    assert settings["DH_FROM_DEFAULT"] == "default"
    assert settings["DH_FROM_ENV"] == "env"
    assert "DH_FROM_FILE" not in settings


def test_file_values_become_strings(tmp_path, clean_environ):
    write_local_settings(tmp_path, {"DH_FROM_FILE": 20})
    assert load_settings(tmp_path)["DH_FROM_FILE"] == "20"


def test_apply_to_environ_adds_settings_but_never_overrides_the_environment(clean_environ):
    clean_environ.setenv("DH_FROM_ENV", "env")
    apply_to_environ({"DH_FROM_ENV": "file", "DH_FROM_FILE": "file"})
    assert os.environ["DH_FROM_ENV"] == "env"
    assert os.environ["DH_FROM_FILE"] == "file"


def test_binding_expressions_expand_and_a_missing_setting_is_an_error():
    settings = {"QUEUE": "resolved", "PREFIX": "t1"}
    assert expand("%PREFIX%-%QUEUE%", settings) == "t1-resolved"
    assert expand("*/5 * * * * *", settings) == "*/5 * * * * *"  # nothing to expand
    with pytest.raises(KeyError, match="MISSING"):
        expand("%MISSING%", settings)


def test_the_samples_values_are_the_defaults_of_what_local_settings_lacks(tmp_path, clean_environ):
    """A local.settings.json copied before a binding's setting was added to the sample."""
    (tmp_path / "local.settings.sample.json").write_text(json.dumps(
        {"Values": {"DH_FROM_DEFAULT": "sample", "DH_FROM_FILE": "sample"}}))
    write_local_settings(tmp_path, {"DH_FROM_FILE": "file"})
    settings = load_settings(tmp_path, sample_values(tmp_path))
    assert settings["DH_FROM_DEFAULT"] == "sample" and settings["DH_FROM_FILE"] == "file"
    assert sample_values(tmp_path / "elsewhere") == {}
