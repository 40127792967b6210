"""The browser setup steps (chrome_open_tabs, chrome_close_tabs): URLs checked at load (a live
third-party website is refused, replicas are offline), and a clear error when no browser runs.
The steps themselves run in tests/apps/test_getters_apps.py."""

from __future__ import annotations

import pytest

from osgym.errors import SetupError, TaskLoadError
from osgym.replicas.client import Replica
from osgym.tasks import setup
from osgym.tasks.setup import run_step
from osgym.tasks.spec import SetupStep, load_task


def _task(step: dict[str, object]) -> dict[str, object]:
    return {"id": "t-tabs", "instruction": "x", "config": [step], "evaluator": {"func": "infeasible"}}


def test_a_live_website_is_refused_at_load_with_the_reason() -> None:
    step = {"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["http://127.0.0.1:8000/",
                                                                        "https://www.example.com/"]}}
    with pytest.raises(TaskLoadError, match="'https://www.example.com/': it opens a live third-party website"):
        load_task(_task(step))
    local = {"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["http://localhost:8000/a", "file:///x"]}}
    assert load_task(_task(local)).config[0].type == "chrome_open_tabs"
    with pytest.raises(TaskLoadError, match="parameters.urls_to_close: expected a list of URLs"):
        load_task(_task({"type": "chrome_close_tabs", "parameters": {"urls_to_close": "http://localhost/"}}))


@pytest.mark.docker
def test_chrome_open_tabs_without_a_browser_fails_naming_the_step(desktop: Replica,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setup, "BROWSER_WAIT_S", 1.0)
    step = SetupStep(type="chrome_open_tabs", parameters={"urls_to_open": ["http://127.0.0.1:9/"]})
    with pytest.raises(SetupError, match=r"task t: config\[0\]: chrome_open_tabs: Chromium is not running"):
        run_step(desktop, step, where="task t: config[0]")
