"""A scripted participant: Debian's Chromium, headless, driven by Selenium through the system
chromedriver (set-up installs both). It answers each puzzle by key press according to a
pattern and lets the page save its data files into a download folder."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
#: the page ignores answers in the first 250 ms of a puzzle (a key held down, a double-click)
SETTLE_S = 0.3
CHROMEDRIVER = "/usr/bin/chromedriver"


def require_browser() -> None:
    """Skip where set-up could not install the browser; in CI it must be there."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        if os.environ.get("CI"):
            pytest.fail("CI set-up should have installed chromium and chromium-driver")
        pytest.skip("chromium and chromium-driver are not installed (scripts/setup.sh does)")


#: (kind, position in the list, puzzle id) -> answer the key (True) or a foil (False)
Pattern = Callable[[str, int, str], bool]


def run_participant(
    pilot: Path, list_index: int, pid: str, downloads: Path, pattern: Pattern, timeout: float = 90
) -> dict[str, object]:
    """Open the pilot, answer every screen, wait for the saved files; returns what happened."""
    from selenium import webdriver
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    doc = json.loads((pilot / "pilot.json").read_text())
    downloads.mkdir(parents=True, exist_ok=True)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
    ):
        opts.add_argument(a)
    opts.add_experimental_option(
        "prefs",
        {
            "download.default_directory": str(downloads),
            "download.prompt_for_download": False,
            "profile.default_content_setting_values.automatic_downloads": 1,
        },
    )
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(CHROMEDRIVER))
    try:
        driver.execute_cdp_cmd(
            "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
        )
        driver.get((pilot / "index.html").as_uri() + f"?list={list_index}&pid={pid}")
        plan = doc["plan"]["lists"][list_index]
        page = (pilot / "pilot.js").read_text()
        page_items = json.loads(page.removeprefix("window.PILOT = ").rstrip().rstrip(";"))["items"]
        practice = {p["item"]: p for p in doc["practice"]}
        position = 0
        answered: list[tuple[str, str, bool]] = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            done = driver.execute_script("return document.body.getAttribute('data-pilot-finished')")
            if done == "yes":
                break
            asked = driver.find_elements(By.CSS_SELECTOR, ".pilot-question")
            if asked:  # a question in words before the pictures (KiVA's what and how)
                puzzle = asked[0].get_attribute("data-puzzle")
                qid = asked[0].get_attribute("data-question")
                q = next(x for x in page_items[puzzle]["questions"] if x["id"] == qid)
                right = pattern(f"question:{qid}", position, puzzle)
                choose = q["key"] if right else (q["key"] + 1) % len(q["options"])
                time.sleep(SETTLE_S)
                ActionChains(driver).send_keys(str(choose + 1) * 2).perform()
                answered.append((f"question:{qid}", puzzle, right))
                _wait_gone(driver, asked[0])
                continue
            shown = driver.find_elements(By.CSS_SELECTOR, ".pilot-context")
            if shown:
                puzzle = shown[0].get_attribute("data-puzzle")
                if puzzle in practice:
                    kind, trial = "practice", practice[puzzle]
                else:
                    kind = "catch" if puzzle in doc["catch_ids"] else "test"
                    trial = plan[position]
                    assert trial["item"] == puzzle, (position, puzzle)
                    position += 1
                key = doc["items"][puzzle]["key"]
                slot = trial["order"].index(key)
                right = pattern(kind, position - 1, puzzle)
                choose = slot if right else (slot + 1) % len(trial["order"])
                time.sleep(SETTLE_S)  # a person looks first; the page ignores earlier keys
                # pressed twice: the second press must not answer the next puzzle (review)
                ActionChains(driver).send_keys(str(choose + 1) * 2).perform()
                answered.append((kind, puzzle, right))
                _wait_gone(driver, shown[0])
                continue
            nxt = driver.find_elements(By.ID, "jspsych-instructions-next")
            if nxt:
                nxt[0].click()
            elif driver.find_elements(By.CSS_SELECTOR, ".pilot-feedback"):
                time.sleep(0.1)
            else:
                ActionChains(driver).send_keys(Keys.SPACE).perform()
            time.sleep(0.05)
        seconds = time.monotonic() - t0
        name = f"pilot-{doc['pilot_id']}-{pid}"
        _wait_for(downloads / f"{name}.csv", downloads / f"{name}.json")
        return {"answered": answered, "seconds": seconds, "csv": downloads / f"{name}.csv",
                "json": downloads / f"{name}.json"}  # fmt: skip
    finally:
        driver.quit()


def _wait_gone(driver: object, element: object, timeout: float = 5) -> None:
    from selenium.common.exceptions import StaleElementReferenceException

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            element.is_displayed()  # type: ignore[attr-defined]
        except StaleElementReferenceException:
            return
        time.sleep(0.02)


def _wait_for(*paths: Path, timeout: float = 10) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if all(p.exists() and p.stat().st_size > 0 for p in paths):
            return
        time.sleep(0.05)
    raise AssertionError(f"the page did not save {[p.name for p in paths]}")


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
