"""Headless Chromium for the browser tests: Debian's `chromium` and `chromium-driver`, driven by
Selenium. Installed here when missing (as root, like the project's other tools), because
Selenium's and Playwright's own browser downloads need a CDN these machines cannot reach."""

from __future__ import annotations

import os
import shutil

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from devhost import system_packages

PACKAGES = ("chromium", "chromium-driver")


def ensure_chromium() -> tuple[str, str]:
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser and driver:
        return browser, driver
    if os.geteuid() != 0:
        raise RuntimeError("the browser tests need Debian's chromium and chromium-driver: "
                           f"sudo apt-get install -y {' '.join(PACKAGES)}")
    system_packages.install(list(PACKAGES), lambda: bool(shutil.which("chromium") and shutil.which("chromedriver")),
                            "once")
    return shutil.which("chromium"), shutil.which("chromedriver")


def headless_chromium(width: int = 1400, height: int = 900) -> webdriver.Chrome:
    browser, driver = ensure_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}"):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))
