"""Property: whatever malformed request arrives, the replica answers a JSON 4xx and keeps serving."""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from osgym.replicas.client import Replica

# Strategies that hypothesis may print (filters and what they wrap) use named functions, not lambdas:
# describing a lambda makes hypothesis ast.parse this file, and CPython 3.11's parser can fail with
# "AST constructor recursion depth mismatch" when another thread of the test process compiles at that time.


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)


def _out_of_range(f: float) -> bool:
    return not -100 <= f <= 20_000


def _not_none(v: Any) -> bool:
    return v is not None


def _not_a_button(b: str) -> bool:
    return b not in ("left", "middle", "right")


def _not_typable(v: Any) -> bool:
    return not (isinstance(v, str) and v)  # any non-empty string is typable


def _not_empty_list(v: Any) -> bool:
    return v != []


def _not_a_dict(v: Any) -> bool:
    return not isinstance(v, dict)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=40),
    _containers,
    max_leaves=20,
)
ACTION_TYPES = ["MOVE_TO", "CLICK", "RIGHT_CLICK", "DOUBLE_CLICK", "DRAG_TO", "SCROLL", "TYPING", "PRESS",
                "KEY_DOWN", "KEY_UP", "HOTKEY", "MOUSE_DOWN", "MOUSE_UP", "WAIT"]
BAD_NUMBERS = st.one_of(st.none(), st.booleans(), st.text(max_size=10), st.lists(st.integers(), max_size=3),
                        st.integers(-(2**40), -101), st.integers(20_000, 2**40),
                        st.floats(allow_nan=True, allow_infinity=True).filter(_out_of_range))
BAD_STRINGS = st.one_of(st.none(), st.booleans(), st.integers(), st.lists(st.text(max_size=3), max_size=3),
                        st.just(""), st.just("not-a-key-name-xyz"))
NOT_NULL = BAD_NUMBERS.filter(_not_none)  # null means "absent" for optional fields
BAD_BUTTONS = st.one_of(NOT_NULL, st.text(max_size=10).filter(_not_a_button))
BAD_TEXT = BAD_STRINGS.filter(_not_typable)
BAD_FIELDS = {"x": BAD_NUMBERS, "y": BAD_NUMBERS, "dy": NOT_NULL, "button": BAD_BUTTONS, "text": BAD_TEXT,
              "key": BAD_STRINGS,
              "keys": st.sampled_from([None, 3, "ctrl", [], ["a"] * 7, ["no-such-key"], [""], [1], ["ctrl", None]]),
              "seconds": st.sampled_from([-1, 61, 1e9, "soon", [1]])}


@st.composite
def bad_action(draw: st.DrawFn) -> dict[str, Any]:
    """A computer_13-looking action with at least one field that must be rejected."""
    kind = draw(st.sampled_from(ACTION_TYPES + ["NOPE", "click", "", "DONE "]))
    field = {"MOVE_TO": "x", "CLICK": "button", "RIGHT_CLICK": "x", "DOUBLE_CLICK": "y", "DRAG_TO": "y",
             "SCROLL": "dy", "TYPING": "text", "PRESS": "key", "KEY_DOWN": "key", "KEY_UP": "key", "HOTKEY": "keys",
             "MOUSE_DOWN": "button", "MOUSE_UP": "button", "WAIT": "seconds"}.get(kind, "x")
    action: dict[str, Any] = {"action_type": kind, "x": 10, "y": 10, "text": "a", "key": "a", "keys": ["a"]}
    action[field] = draw(BAD_FIELDS[field])
    if kind in ("CLICK", "RIGHT_CLICK", "DOUBLE_CLICK", "SCROLL") and field in ("x", "y") and action[field] is None:
        action[field] = -1  # x and y may be left out together, but one without the other is wrong
    return action


PATHS = st.one_of(
    st.sampled_from(["../../etc/passwd", "/home/user/../../etc/shadow", "/tmp/../root/.bashrc", "~/../../etc/hosts",
                     "/proc/1/environ", "/run/osgym/token", "", "/", "\x00", "/tmp/\x00x", "~root/.ssh/id_rsa"]),
    st.builds(lambda n, tail: "/tmp/" + "../" * n + tail, st.integers(1, 8), st.sampled_from(["etc/passwd", "opt"])),
)

REQUESTS = st.one_of(
    st.tuples(st.just("POST"), st.just("/actions"), st.binary(max_size=200)),
    st.tuples(st.just("POST"), st.just("/actions"),
              JSON.filter(_not_empty_list).map(lambda v: json.dumps({"actions": v}).encode())),
    st.tuples(st.just("POST"), st.just("/actions"),
              st.lists(bad_action(), min_size=1, max_size=3).map(lambda a: json.dumps({"actions": a}).encode())),
    st.tuples(st.just("POST"), st.just("/actions"), st.integers(201, 400).map(
        lambda n: json.dumps({"actions": [{"action_type": "DONE"}] * n}).encode())),
    st.tuples(st.just("POST"), st.just("/actions"), st.integers(10_001, 2_000_000).map(
        lambda n: json.dumps({"actions": [{"action_type": "TYPING", "text": "x" * n}]}).encode())),
    st.tuples(st.sampled_from(["POST"]), st.sampled_from(["/execute", "/launch", "/windows/activate", "/windows/wait",
                                                          "/windows/close", "/recording/start", "/view/start",
                                                          "/view/stop", "/token"]),
              JSON.filter(_not_a_dict).map(lambda v: json.dumps(v).encode())),
    st.tuples(st.just("POST"), st.just("/token"),  # never a valid token: the fuzz goes on with the replica's own
              st.sampled_from([{}, {"token": 5}, {"token": ""}, {"token": "x" * 23}, {"token": "x" * 257},
                               {"token": "a b" * 10}, {"token": "\u00e9" * 30}, {"token": "\x00" * 30}])
              .map(lambda v: json.dumps(v).encode())),
    st.tuples(st.just("POST"), st.sampled_from(["/execute", "/launch"]),
              st.sampled_from([{"command": ""}, {"command": []}, {"command": [1, 2]}, {"command": "x", "shell": "yes"},
                               {"command": "'unbalanced", "shell": False}, {"command": ["a\x00b"]}])
              .map(lambda v: json.dumps(v).encode())),
    st.tuples(st.just("POST"), st.just("/execute"),
              st.sampled_from([{"command": "true", "timeout": 0}, {"command": "true", "timeout": 1e9},
                               {"command": "true", "timeout": "1"}]).map(lambda v: json.dumps(v).encode())),
    st.tuples(st.just("GET"), PATHS.map(lambda p: "/files?" + str(httpx.QueryParams({"path": p}))), st.just(b"")),
    st.tuples(st.just("PUT"), PATHS.map(lambda p: "/files?" + str(httpx.QueryParams({"path": p}))),
              st.binary(max_size=100)),
    st.tuples(st.just("GET"), st.sampled_from(["/screenshot?format=gif", "/screenshot?quality=0",
                                               "/screenshot?max_side=1", "/screenshot?quality=abc",
                                               "/accessibility?max_nodes=-1", "/accessibility?timeout=x"]),
              st.just(b"")),
    st.tuples(st.sampled_from(["GET", "POST", "PUT", "DELETE"]),
              st.text(alphabet="abcxyz/._-%", min_size=1, max_size=30).map(lambda p: "/nope/" + p), st.just(b"")),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(request=REQUESTS)
def test_malformed_requests_get_a_json_4xx(shared_replica: Replica, request: tuple[str, str, bytes]) -> None:
    method, path, body = request
    r = shared_replica.api.send(method, path, content=body, headers={"Content-Type": "application/json"})
    assert 400 <= r.status_code < 500, (method, path, body[:200], r.status_code, r.text[:300])
    assert "error" in r.json()


def test_the_replica_still_answers_after_the_fuzzing(shared_replica: Replica) -> None:
    assert shared_replica.health()["status"] == "ok"
    assert shared_replica.screenshot(max_side=64).data


def test_null_optional_fields_mean_absent(shared_replica: Replica) -> None:
    body = {"actions": [{"action_type": "SCROLL", "dx": 1, "dy": None, "x": None, "y": None},
                        {"action_type": "CLICK", "x": 5, "y": 5, "button": None, "num_clicks": None},
                        {"action_type": "WAIT", "seconds": 0}]}
    r = shared_replica.api.send("POST", "/actions", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["performed"] == 3
