"""The ``desktop-basics`` suite: everyday chores in the terminal, the file manager, the text editor,
the window manager and simple settings, plus infeasible requests whose right answer is FAIL.

Every template draws its names, contents, paths and counts from a seeded RNG, and
carries a scripted oracle that solves it through GUI input (clicks, typing and
keys into windows; never the control API's ``/execute``). Oracles wait for windows
instead of sleeping, and prefer the keyboard to pixel-precise clicks.
"""

from __future__ import annotations

import random
from typing import Any

from osgym.tasks.generators import (
    HOME,
    Template,
    cmd,
    execute,
    launch,
    launch_until_window,
    op,
    rule,
    vm_file,
    wait,
    write_file,
)

NAME = "desktop-basics"
DESCRIPTION = "Everyday desktop chores: terminal, file manager, text editor, windows, settings; some infeasible."

NAMES = ["notes", "report", "budget", "ideas", "draft", "summary", "agenda", "journal", "recipes", "contacts",
         "invoice", "letter", "plan", "minutes", "todo", "inventory", "schedule", "checklist", "outline", "memo",
         "story", "poem", "lyrics", "tasks", "goals", "expenses", "receipts", "travel", "packing", "errands"]
WORDS = ["apple", "river", "mountain", "coffee", "yellow", "garden", "window", "silver", "planet", "orange",
         "forest", "candle", "rocket", "pepper", "violet", "harbor", "meadow", "thunder", "pencil", "marble",
         "canyon", "lemon", "falcon", "cotton", "saddle", "walnut", "copper", "breeze", "maple", "tiger"]
ANIMALS = ["otter", "badger", "heron", "lynx", "marmot", "puffin", "walrus", "gecko", "bison", "coyote", "ferret",
           "ibis", "koala", "lemur", "magpie", "narwhal", "ocelot", "panda", "quokka", "raven", "salmon", "tapir",
           "urchin", "vole", "wombat", "yak", "zebra", "alpaca", "beaver", "cobra"]
SUBFOLDERS = ["archive", "backup", "shared", "inbox", "outbox", "review", "final", "pending", "current", "spare"]
DIRS = ["Desktop", "Documents", "Downloads"]
XTERM = [launch(["xterm"]), wait("xterm")]
CLICK_XTERM = op("click_window", title="xterm")
DONE = op("done")


def _words(rng: random.Random, k: int) -> list[str]:
    return rng.sample(WORDS, k)


def _lines(words: list[str]) -> str:
    return "".join(w + "\n" for w in words)


def _file(rng: random.Random, exts: tuple[str, ...] = ("txt", "md")) -> str:
    return f"{rng.choice(NAMES)}.{rng.choice(exts)}"


def _mousepad(path: str | None = None, *, keyfile: bool = False) -> list[dict[str, Any]]:
    """Launch mousepad (on ``path``) and wait for its window; ``keyfile`` keeps its settings in a file."""
    title = "Mousepad" if path is None else path.rsplit("/", 1)[-1]
    env = {"GSETTINGS_BACKEND": "keyfile"} if keyfile else None
    return launch_until_window(["mousepad", *([path] if path else [])], title, env=env)


def _save_as(path: str) -> list[dict[str, Any]]:
    """Oracle ops to fill and confirm mousepad's Save As dialog.

    Enter goes only once Save is sensitive: GTK's file chooser re-enables it 150 ms after the last change
    to the Name field, and until then ignores Enter (on a quiet machine the next step comes sooner).
    """
    return [op("wait_window", title="Save As"), op("hotkey", keys=["ctrl", "a"]), op("type", text=path),
            op("wait_enabled", window="Save As", control="Save"), op("press", key="enter"),
            op("wait_window", title=path.rsplit("/", 1)[-1] + " - Mousepad")]


SAVE = [op("hotkey", keys=["ctrl", "s"]), op("wait_gone", title="*")]


def _pcmanfm(folder: str) -> list[dict[str, Any]]:
    return launch_until_window(["pcmanfm", folder], folder.rsplit("/", 1)[-1])


def _select(name: str) -> list[dict[str, Any]]:
    """Select a file in pcmanfm by typing its name, then close the type-ahead box."""
    return [op("type", text=name, noise=False), op("press", key="Escape", noise=False)]


# ---- terminal --------------------------------------------------------------------------------
def terminal_create_file(rng: random.Random) -> dict[str, Any]:
    d, name, line = rng.choice(DIRS), _file(rng), " ".join(_words(rng, 3))
    path = f"~/{d}/{name}"
    return {
        "instruction": f"In the open terminal, create the file {path} whose only line is: {line}",
        "related_apps": ["xterm"], "config": XTERM,
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"), "expected": rule(expected=line + "\n")},
        "oracle": [CLICK_XTERM, op("type", text=f"echo '{line}' > {path}\n"), DONE],
    }


def terminal_rename_file(rng: random.Random) -> dict[str, Any]:
    d = rng.choice(DIRS)
    old, new = rng.sample(NAMES, 2)
    ext = rng.choice(["txt", "md", "log"])
    old, new = f"{old}.{ext}", f"{new}.{ext}"
    body = " ".join(_words(rng, 2)) + "\n"
    return {
        "instruction": f"Rename the file {old} in ~/{d} to {new}.",
        "related_apps": ["xterm"], "config": [write_file(f"{HOME}/{d}/{old}", body), *XTERM],
        "evaluator": {
            "func": ["check_directory_tree", "exact_match"],
            "result": [{"type": "list_directory", "path": f"{HOME}/{d}"}, cmd(f"cat ~/{d}/{new}")],
            "expected": [rule(present=[new], absent=[old]), rule(expected=body)],
        },
        "oracle": [CLICK_XTERM, op("type", text=f"mv ~/{d}/{old} ~/{d}/{new}\n"), DONE],
    }


def terminal_make_dirs(rng: random.Random) -> dict[str, Any]:
    parent, subs = rng.choice(NAMES), _words(rng, rng.randint(2, 4))
    base = f"~/Documents/{parent}"
    return {
        "instruction": f"Using the terminal, create the folder {base} with the subfolders {', '.join(subs)} in it.",
        "related_apps": ["xterm"], "config": XTERM,
        "evaluator": {"func": "check_directory_tree",
                      "result": {"type": "list_directory", "path": f"{HOME}/Documents/{parent}"},
                      "expected": rule(present=subs, absent=[])},
        "oracle": [CLICK_XTERM, op("type", text="mkdir -p " + " ".join(f"{base}/{s}" for s in subs) + "\n"), DONE],
    }


def terminal_copy_file(rng: random.Random) -> dict[str, Any]:
    name, folder = _file(rng), rng.choice(SUBFOLDERS)
    src = f"{HOME}/Desktop/{name}"
    return {
        "instruction": f"Copy the file {name} from the Desktop into ~/Documents/{folder}, keeping the original.",
        "related_apps": ["xterm"],
        "config": [write_file(src, " ".join(_words(rng, 4)) + "\n"), execute(f"mkdir -p ~/Documents/{folder}"),
                   *XTERM],
        "evaluator": {
            "func": ["check_directory_tree", "file_exists"],
            "result": [{"type": "list_directory", "path": f"{HOME}/Documents/{folder}"}, vm_file(src)],
            "expected": [rule(present=[name], absent=[]), None],
        },
        "oracle": [CLICK_XTERM, op("type", text=f"cp ~/Desktop/{name} ~/Documents/{folder}/\n"), DONE],
    }


def terminal_delete_by_extension(rng: random.Random) -> dict[str, Any]:
    folder = rng.choice(NAMES)
    names = rng.sample(WORDS, rng.randint(4, 7))
    k = rng.randint(2, len(names) - 2)
    logs, keep = [f"{n}.log" for n in names[:k]], [f"{n}.txt" for n in names[k:]]
    base = f"{HOME}/Documents/{folder}"
    return {
        "instruction": f"Delete every .log file in ~/Documents/{folder} and keep all the other files.",
        "related_apps": ["xterm"],
        "config": [execute(f"mkdir -p {base} && cd {base} && touch {' '.join(logs + keep)}"), *XTERM],
        "evaluator": {"func": "check_directory_tree", "result": {"type": "list_directory", "path": base},
                      "expected": rule(present=keep, absent=logs)},
        "oracle": [CLICK_XTERM, op("type", text=f"rm ~/Documents/{folder}/*.log\n"), DONE],
    }


def terminal_count_lines(rng: random.Random) -> dict[str, Any]:
    name, n = rng.choice(NAMES), rng.randint(5, 60)
    content = _lines([rng.choice(WORDS) for _ in range(n)])
    return {
        "instruction": f"Write the number of lines of ~/Documents/{name}.txt, and nothing else, into "
                       f"~/Desktop/line_count.txt.",
        "related_apps": ["xterm"], "config": [write_file(f"{HOME}/Documents/{name}.txt", content), *XTERM],
        "evaluator": {"func": "exact_match", "result": cmd("cat ~/Desktop/line_count.txt"),
                      "expected": rule(expected=f"{n}\n")},
        "oracle": [CLICK_XTERM, op("type", text=f"wc -l < ~/Documents/{name}.txt > ~/Desktop/line_count.txt\n"), DONE],
    }


def terminal_append_line(rng: random.Random) -> dict[str, Any]:
    name, d = _file(rng), rng.choice(DIRS)
    words = _words(rng, rng.randint(3, 6))
    body, line = _lines(words[:-1]), words[-1] + " " + rng.choice(NAMES)
    path = f"{HOME}/{d}/{name}"
    ref = f"/tmp/osgym-expected/{name}"
    return {
        "instruction": f"Append the line '{line}' to the end of ~/{d}/{name}.",
        "related_apps": ["xterm"],
        "config": [write_file(path, body), write_file(ref, body + line + "\n"), *XTERM],
        "evaluator": {"func": "compare_text_file", "result": vm_file(path, "result.txt"),
                      "expected": vm_file(ref, "expected.txt")},
        "oracle": [CLICK_XTERM, op("type", text=f"echo '{line}' >> ~/{d}/{name}\n"), DONE],
    }


def terminal_sort_lines(rng: random.Random) -> dict[str, Any]:
    name = rng.choice(NAMES)
    words = _words(rng, rng.randint(4, 10))
    src, dst = f"~/Documents/{name}.txt", f"~/Documents/{name}-sorted.txt"
    ref = f"/tmp/osgym-expected/{name}-sorted.txt"
    return {
        "instruction": f"Save the lines of {src} in alphabetical order to {dst}.",
        "related_apps": ["xterm"],
        "config": [write_file(f"{HOME}/Documents/{name}.txt", _lines(words)), write_file(ref, _lines(sorted(words))),
                   *XTERM],
        "evaluator": {"func": "compare_text_file",
                      "result": vm_file(f"{HOME}/Documents/{name}-sorted.txt", "result.txt"),
                      "expected": vm_file(ref, "expected.txt")},
        "oracle": [CLICK_XTERM, op("type", text=f"sort {src} > {dst}\n"), DONE],
    }


def terminal_chmod(rng: random.Random) -> dict[str, Any]:
    name, d = rng.choice(NAMES) + rng.choice(["", "-run", "-build", "-sync"]), rng.choice(DIRS)
    who, mode = rng.choice([("everyone", "755"), ("its owner only", "744")])
    path = f"{HOME}/{d}/{name}.sh"
    return {
        "instruction": f"Make the script ~/{d}/{name}.sh executable by {who} (read and write stay as they are).",
        "related_apps": ["xterm"],
        "config": [write_file(path, "#!/bin/sh\necho " + rng.choice(WORDS) + "\n"), execute(f"chmod 644 {path}"),
                   *XTERM],
        "evaluator": {"func": "exact_match", "result": cmd(f"stat -c %a {path}"),
                      "expected": rule(expected=mode + "\n")},
        "oracle": [CLICK_XTERM, op("type", text=f"chmod {mode} ~/{d}/{name}.sh\n"), DONE],
    }


def terminal_symlink(rng: random.Random) -> dict[str, Any]:
    name, link = _file(rng), rng.choice(WORDS) + "-link"
    target = f"{HOME}/Documents/{name}"
    return {
        "instruction": f"Create a symbolic link ~/Desktop/{link} that points to {target}.",
        "related_apps": ["xterm"], "config": [write_file(target, rng.choice(WORDS) + "\n"), *XTERM],
        "evaluator": {"func": "exact_match", "result": cmd(f"readlink ~/Desktop/{link}"),
                      "expected": rule(expected=target + "\n")},
        "oracle": [CLICK_XTERM, op("type", text=f"ln -s {target} ~/Desktop/{link}\n"), DONE],
    }


def terminal_archive(rng: random.Random) -> dict[str, Any]:
    folder, files = rng.choice(NAMES), [f"{w}.txt" for w in _words(rng, rng.randint(2, 5))]
    base = f"{HOME}/Documents/{folder}"
    return {
        "instruction": f"Pack the folder ~/Documents/{folder} into the gzip-compressed tar archive "
                       f"~/Desktop/{folder}.tar.gz (the archive holds the folder {folder}/ itself).",
        "related_apps": ["xterm"],
        "config": [execute(f"mkdir -p {base} && cd {base} && for f in {' '.join(files)}; do echo $f > $f; done"),
                   *XTERM],
        "evaluator": {"func": "check_include_exclude", "result": cmd(f"tar tzf ~/Desktop/{folder}.tar.gz"),
                      "expected": rule(include=[f"{folder}/{f}" for f in files], exclude=[])},
        "oracle": [CLICK_XTERM, op("type", text=f"cd ~/Documents && tar czf ~/Desktop/{folder}.tar.gz {folder}\n"),
                   DONE],
    }


def terminal_replace_word(rng: random.Random) -> dict[str, Any]:
    old, new = rng.sample(WORDS, 2)
    others = [w for w in WORDS if old not in w and w not in (old, new)]
    lines = [" ".join(rng.sample(others, 2) + [old]) for _ in range(rng.randint(2, 5))]
    name = _file(rng)
    path = f"~/Documents/{name}"
    return {
        "instruction": f"In {path}, replace every occurrence of the word '{old}' with '{new}'.",
        "related_apps": ["xterm"], "config": [write_file(f"{HOME}/Documents/{name}", _lines(lines)), *XTERM],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"),
                      "expected": rule(expected=_lines([ln.replace(old, new) for ln in lines]))},
        "oracle": [CLICK_XTERM, op("type", text=f"sed -i 's/{old}/{new}/g' {path}\n"), DONE],
    }


def terminal_find_file(rng: random.Random) -> dict[str, Any]:
    a, b, c = _words(rng, 3)
    target = f"{rng.choice(NAMES)}-{rng.randint(1, 99)}.txt"
    decoys = [f"{HOME}/Documents/{w}/{rng.choice(NAMES)}.txt" for w in _words(rng, 3)]
    path = f"{HOME}/Documents/{a}/{b}/{c}/{target}"
    setup = " && ".join(f"mkdir -p {p.rsplit('/', 1)[0]} && touch {p}" for p in [path, *decoys])
    return {
        "instruction": f"Somewhere under ~/Documents there is a file named {target}. Write its absolute path, "
                       f"and nothing else, into ~/Desktop/found.txt.",
        "related_apps": ["xterm"], "config": [execute(setup), *XTERM],
        "evaluator": {"func": "exact_match", "result": cmd("cat ~/Desktop/found.txt"),
                      "expected": rule(expected=path + "\n")},
        "oracle": [CLICK_XTERM, op("type", text=f"find ~/Documents -name {target} > ~/Desktop/found.txt\n"), DONE],
    }


# ---- settings ---------------------------------------------------------------------------------
ALIASES = ["ll", "la", "gs", "up", "cls", "hh", "now", "ports", "mem", "disk", "lt", "work", "home2", "psg", "dfh"]
ALIAS_CMDS = ["ls -la", "ls -A", "clear", "history", "date", "df -h", "du -sh", "cd ..", "ps aux", "free -m",
              "uptime", "ls -lt", "pwd", "whoami"]
ENV_VARS = ["PROJECT_HOME", "WORKSPACE", "BACKUP_DIR", "OSGYM_MODE", "API_REGION", "BUILD_TYPE", "DATA_ROOT",
            "LOG_LEVEL", "THEME_NAME", "DEFAULT_CITY"]


def settings_bash_alias(rng: random.Random) -> dict[str, Any]:
    name, command = rng.choice(ALIASES), rng.choice(ALIAS_CMDS)
    return {
        "instruction": f"Define a shell alias '{name}' for the command '{command}' in ~/.bashrc, so every new "
                       f"terminal has it.",
        "related_apps": ["xterm"], "config": XTERM,
        "evaluator": {"func": "exact_match", "result": cmd(f"bash -ic 'alias {name}' 2>/dev/null"),
                      "expected": rule(expected=f"alias {name}='{command}'\n")},
        "oracle": [CLICK_XTERM, op("type", text=f"echo \"alias {name}='{command}'\" >> ~/.bashrc\n"), DONE],
    }


def settings_bash_env(rng: random.Random) -> dict[str, Any]:
    var = rng.choice(ENV_VARS)
    value = rng.choice([rng.choice(WORDS), f"{HOME}/{rng.choice(NAMES)}", f"{rng.choice(WORDS)}-{rng.randint(1, 9)}"])
    return {
        "instruction": f"Make every new terminal have the environment variable {var} set to {value}, by exporting "
                       f"it in ~/.bashrc.",
        "related_apps": ["xterm"], "config": XTERM,
        "evaluator": {"func": "exact_match", "result": cmd(f"bash -ic 'printf %s \"${var}\"' 2>/dev/null"),
                      "expected": rule(expected=value)},
        "oracle": [CLICK_XTERM, op("type", text=f"echo 'export {var}={value}' >> ~/.bashrc\n"), DONE],
    }


def settings_xresources(rng: random.Random) -> dict[str, Any]:
    key, value = rng.choice([
        ("faceSize", str(rng.randint(8, 24))), ("saveLines", str(rng.randrange(500, 20001, 500))),
        ("background", rng.choice(["black", "white", "navy", "gray20", "ivory", "darkgreen"])),
        ("foreground", rng.choice(["black", "white", "yellow", "gray80", "orange", "cyan"])),
        ("cursorColor", rng.choice(["red", "green", "blue", "magenta", "gold", "orchid"])),
        ("faceName", rng.choice(["DejaVu Sans Mono", "Monospace", "Liberation Mono", "Noto Mono"])),
        ("geometry", f"{rng.choice([80, 100, 120, 132])}x{rng.choice([24, 30, 40, 50])}"),
        ("scrollBar", rng.choice(["true", "false"])),
    ])
    line = f"XTerm*{key}: {value}"
    return {
        "instruction": f"Add the X resource setting '{line}' for xterm to ~/.Xresources.",
        "related_apps": ["xterm"], "config": XTERM,
        "evaluator": {"func": "check_include_exclude", "result": cmd("cat ~/.Xresources"),
                      "expected": rule(include=[line], exclude=[])},
        "oracle": [CLICK_XTERM, op("type", text=f"echo '{line}' >> ~/.Xresources\n"), DONE],
    }


MOUSEPAD_VIEW = {  # View menu item -> (mnemonic, key in mousepad's GSettings keyfile)
    "line numbers": ("u", "show-line-numbers=true"),
    "toolbar": ("t", "toolbar-visible=true"),
    "status bar": ("a", "statusbar-visible=true"),
}


def settings_editor_view(rng: random.Random) -> dict[str, Any]:
    items = rng.sample(sorted(MOUSEPAD_VIEW), rng.randint(1, 3))
    path = f"{HOME}/{rng.choice(DIRS)}/{_file(rng)}"
    ops: list[dict[str, Any]] = []
    for item in items:
        ops += [op("hotkey", keys=["alt", "v"]), op("press", key=MOUSEPAD_VIEW[item][0], noise=False)]
    return {
        "instruction": f"Make the text editor show its {' and its '.join(items)}.",
        "related_apps": ["mousepad"],
        "config": [write_file(path, rng.choice(WORDS) + "\n"), *_mousepad(path, keyfile=True)],
        "evaluator": {"func": "check_include_exclude", "result": cmd("cat ~/.config/glib-2.0/settings/keyfile"),
                      "expected": rule(include=[MOUSEPAD_VIEW[i][1] for i in items],
                                       exclude=[v[1] for k, v in MOUSEPAD_VIEW.items() if k not in items])},
        "oracle": [op("click_window", title="Mousepad"), *ops, DONE],
    }


APPS = ["sketchpad", "photon", "tunebox", "mailer", "notekeeper", "planner", "reader", "syncer"]
INI_KEYS = {"theme": ["light", "dark", "solarized", "contrast"], "language": ["en", "de", "fr", "es", "ja"],
            "autosave": ["true", "false"], "interval": ["5", "10", "15", "30", "60"],
            "font_size": ["10", "11", "12", "14", "16"], "units": ["metric", "imperial"]}


def settings_edit_config(rng: random.Random) -> dict[str, Any]:
    app = rng.choice(APPS)
    keys = rng.sample(sorted(INI_KEYS), rng.randint(3, 5))
    values = {k: rng.choice(INI_KEYS[k]) for k in keys}
    key = rng.choice(keys)
    new = rng.choice([v for v in INI_KEYS[key] if v != values[key]])
    path = f"{HOME}/.config/{app}/settings.ini"
    before = "[main]\n" + "".join(f"{k}={values[k]}\n" for k in keys)
    after = "[main]\n" + "".join(f"{k}={new if k == key else values[k]}\n" for k in keys)
    return {
        "instruction": f"The text editor shows {app}'s configuration file. Change the setting {key} to {new} "
                       f"and save the file, leaving the other settings as they are.",
        "related_apps": ["mousepad"], "config": [write_file(path, before), *_mousepad(path)],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"), "expected": rule(expected=after)},
        "oracle": [op("click_window", title="settings.ini"), op("hotkey", keys=["ctrl", "a"]),
                   op("type", text=after), *SAVE, DONE],
    }


# ---- text editor ------------------------------------------------------------------------------
def editor_save_text(rng: random.Random) -> dict[str, Any]:
    d, name, line = rng.choice(DIRS), _file(rng), " ".join(_words(rng, rng.randint(3, 5)))
    path = f"{HOME}/{d}/{name}"
    return {
        "instruction": f"In the text editor, write the line '{line}' and save the document as ~/{d}/{name}",
        "related_apps": ["mousepad"], "config": _mousepad(),
        "evaluator": {"func": "check_include_exclude", "result": cmd(f"cat {path}"),
                      "expected": rule(include=[line], exclude=[])},
        "oracle": [op("click_window", title="Mousepad"), op("type", text=line + "\n"), op("hotkey", keys=["ctrl", "s"]),
                   *_save_as(path), DONE],
    }


def editor_write_list(rng: random.Random) -> dict[str, Any]:
    items, name = _words(rng, rng.randint(3, 6)), rng.choice(NAMES)
    path = f"{HOME}/Documents/{name}-list.txt"
    return {
        "instruction": f"Using the text editor, write a list with one item per line, in this order: "
                       f"{', '.join(items)}. Save it as ~/Documents/{name}-list.txt",
        "related_apps": ["mousepad"], "config": _mousepad(),
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"), "expected": rule(expected=_lines(items))},
        "oracle": [op("click_window", title="Mousepad"), op("type", text=_lines(items)),
                   op("hotkey", keys=["ctrl", "s"]), *_save_as(path), DONE],
    }


def editor_append_line(rng: random.Random) -> dict[str, Any]:
    name, d = _file(rng), rng.choice(DIRS)
    words = _words(rng, rng.randint(3, 6))
    line = f"{rng.choice(NAMES)} {words[-1]}"
    path = f"{HOME}/{d}/{name}"
    return {
        "instruction": f"The text editor has ~/{d}/{name} open. Add the line '{line}' at the end and save.",
        "related_apps": ["mousepad"], "config": [write_file(path, _lines(words[:-1])), *_mousepad(path)],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"),
                      "expected": rule(expected=_lines(words[:-1]) + line + "\n")},
        "oracle": [op("click_window", title=name), op("hotkey", keys=["ctrl", "End"]), op("type", text=line + "\n"),
                   *SAVE, DONE],
    }


def editor_delete_line(rng: random.Random) -> dict[str, Any]:
    name, d = _file(rng), rng.choice(DIRS)
    words = _words(rng, rng.randint(3, 6))
    k = rng.randrange(len(words))
    path = f"{HOME}/{d}/{name}"
    return {
        "instruction": f"In the text editor, delete the line '{words[k]}' from ~/{d}/{name} and save the file.",
        "related_apps": ["mousepad"], "config": [write_file(path, _lines(words)), *_mousepad(path)],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"),
                      "expected": rule(expected=_lines(words[:k] + words[k + 1:]))},
        "oracle": [op("click_window", title=name), op("hotkey", keys=["ctrl", "Home"]),
                   *[op("press", key="Down") for _ in range(k)], op("hotkey", keys=["shift", "Down"]),
                   op("press", key="Delete"), *SAVE, DONE],
    }


def editor_insert_header(rng: random.Random) -> dict[str, Any]:
    name, d = _file(rng), rng.choice(DIRS)
    words, header = _words(rng, rng.randint(2, 5)), f"# {rng.choice(NAMES).title()} {rng.randint(2020, 2030)}"
    path = f"{HOME}/{d}/{name}"
    return {
        "instruction": f"In the text editor, insert the line '{header}' at the very top of ~/{d}/{name} and save.",
        "related_apps": ["mousepad"], "config": [write_file(path, _lines(words)), *_mousepad(path)],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"),
                      "expected": rule(expected=header + "\n" + _lines(words))},
        "oracle": [op("click_window", title=name), op("hotkey", keys=["ctrl", "Home"]), op("type", text=header + "\n"),
                   *SAVE, DONE],
    }


def editor_save_copy(rng: random.Random) -> dict[str, Any]:
    a, b = rng.sample(NAMES, 2)
    src, d = f"{HOME}/Documents/{a}.txt", rng.choice(DIRS)
    dst = f"{HOME}/{d}/{b}-copy.txt"
    return {
        "instruction": f"Using the text editor's Save As, save a copy of the open document as ~/{d}/{b}-copy.txt",
        "related_apps": ["mousepad"], "config": [write_file(src, _lines(_words(rng, 3))), *_mousepad(src)],
        "evaluator": {"func": "compare_text_file", "result": vm_file(dst, "result.txt"),
                      "expected": vm_file(src, "expected.txt")},
        "oracle": [op("click_window", title=f"{a}.txt"), op("hotkey", keys=["ctrl", "shift", "s"]), *_save_as(dst),
                   DONE],
    }


# ---- file manager -----------------------------------------------------------------------------
def _folder_with_files(rng: random.Random, n: tuple[int, int] = (3, 5)) -> tuple[str, list[str], dict[str, Any]]:
    folder = f"{HOME}/Documents/{rng.choice(NAMES)}"
    files = [f"{w}.{rng.choice(['txt', 'md', 'csv'])}" for w in _words(rng, rng.randint(*n))]
    step = execute(f"mkdir -p {folder} && cd {folder} && for f in {' '.join(files)}; do echo $f > $f; done")
    return folder, files, step


def files_rename(rng: random.Random) -> dict[str, Any]:
    folder, files, step = _folder_with_files(rng)
    old = rng.choice(files)
    new = f"{rng.choice(WORDS)}-{rng.choice(NAMES)}.{old.split('.')[-1]}"
    return {
        "instruction": f"In the file manager, rename {old} to {new}.",
        "related_apps": ["pcmanfm"], "config": [step, *_pcmanfm(folder)],
        "evaluator": {"func": "check_directory_tree", "result": {"type": "list_directory", "path": folder},
                      "expected": rule(present=[new], absent=[old])},
        "oracle": [*_select(old), op("press", key="F2"), op("wait_window", title="Rename File"),
                   op("hotkey", keys=["ctrl", "a"]), op("type", text=new), op("press", key="enter"),
                   op("wait_gone", title="Rename File"), DONE],
    }


def files_create_folder(rng: random.Random) -> dict[str, Any]:
    folder, files, step = _folder_with_files(rng, (1, 3))
    name = f"{rng.choice(SUBFOLDERS)}-{rng.randint(1, 99)}"
    return {
        "instruction": f"Using the file manager, create a new folder named {name} in the folder it shows.",
        "related_apps": ["pcmanfm"], "config": [step, *_pcmanfm(folder)],
        "evaluator": {"func": "exact_match", "result": cmd(f"test -d {folder}/{name} && echo yes"),
                      "expected": rule(expected="yes\n")},
        "oracle": [op("hotkey", keys=["ctrl", "shift", "n"]), op("wait_window", title="New Folder"),
                   op("hotkey", keys=["ctrl", "a"]), op("type", text=name), op("press", key="enter"),
                   op("wait_gone", title="New Folder"), DONE],
    }


def files_trash(rng: random.Random) -> dict[str, Any]:
    folder, files, step = _folder_with_files(rng)
    victim = rng.choice(files)
    return {
        "instruction": f"In the file manager, move {victim} to the trash.",
        "related_apps": ["pcmanfm"], "config": [step, *_pcmanfm(folder)],
        "evaluator": {
            "func": ["check_directory_tree", "check_directory_tree"],
            "result": [{"type": "list_directory", "path": folder},
                       {"type": "list_directory", "path": f"{HOME}/.local/share/Trash/files"}],
            "expected": [rule(present=[f for f in files if f != victim], absent=[victim]),
                         rule(present=[victim], absent=[])],
        },
        "oracle": [*_select(victim), op("press", key="Delete"), op("wait_window", title="Confirm"),
                   op("press", key="enter"), op("wait_gone", title="Confirm"), DONE],
    }


def _files_transfer(rng: random.Random, move: bool) -> dict[str, Any]:
    folder, files, step = _folder_with_files(rng)
    name, sub = rng.choice(files), rng.choice(SUBFOLDERS)
    dest = f"{folder}/{sub}"
    verb = "Move" if move else "Copy"
    check = ({"func": "check_directory_tree", "result": {"type": "list_directory", "path": folder},
              "expected": rule(present=[sub], absent=[name])} if move else
             {"func": "file_exists", "result": vm_file(f"{folder}/{name}", "original"), "expected": None})
    return {
        "instruction": f"Using the file manager, {verb.lower()} {name} into its subfolder {sub}.",
        "related_apps": ["pcmanfm"], "config": [step, execute(f"mkdir -p {dest}"), *_pcmanfm(folder)],
        "evaluator": {
            "func": ["check_directory_tree", check["func"]],
            "result": [{"type": "list_directory", "path": dest}, check["result"]],
            "expected": [rule(present=[name], absent=[]), check["expected"]],
        },
        "oracle": [*_select(name), op("hotkey", keys=["ctrl", "x" if move else "c"]), op("hotkey", keys=["ctrl", "l"]),
                   op("type", text=dest), op("press", key="enter"), op("wait_window", title=sub),
                   op("hotkey", keys=["ctrl", "v"]), DONE],
    }


def files_copy(rng: random.Random) -> dict[str, Any]:
    return _files_transfer(rng, move=False)


def files_move(rng: random.Random) -> dict[str, Any]:
    return _files_transfer(rng, move=True)


# ---- window management ------------------------------------------------------------------------
GRID = [(20, 40), (660, 40), (20, 420), (660, 420)]


def _windows(rng: random.Random, n: tuple[int, int] = (2, 4)) -> tuple[list[str], list[dict[str, Any]]]:
    titles = rng.sample(ANIMALS, rng.randint(*n))
    steps: list[dict[str, Any]] = []
    for t, (x, y) in zip(titles, GRID, strict=False):
        steps += [launch(["xterm", "-T", t, "-xrm", "XTerm*allowTitleOps: false", "-geometry", f"60x15+{x}+{y}"]),
                  wait(t)]
    return titles, steps


def _window_task(instruction: str, steps: list[dict[str, Any]], rules: dict[str, Any],
                 oracle: list[dict[str, Any]]) -> dict[str, Any]:
    return {"instruction": instruction, "related_apps": ["openbox", "xterm"], "config": steps,
            "evaluator": {"func": "check_window_state", "result": {"type": "vm_windows"}, "expected": rule(**rules)},
            "oracle": [*oracle, DONE]}


def windows_close(rng: random.Random) -> dict[str, Any]:
    titles, steps = _windows(rng)
    t = rng.choice(titles)
    return _window_task(f"Close the terminal window titled '{t}' and leave the other windows open.", steps,
                        {"absent": [t], "present": [x for x in titles if x != t]},
                        [op("click_window", title=t), op("hotkey", keys=["alt", "F4"]), op("wait_gone", title=t)])


def windows_close_others(rng: random.Random) -> dict[str, Any]:
    titles, steps = _windows(rng, (3, 4))
    keep = rng.choice(titles)
    oracle: list[dict[str, Any]] = []
    for t in titles:
        if t != keep:
            oracle += [op("click_window", title=t), op("hotkey", keys=["alt", "F4"]), op("wait_gone", title=t)]
    return _window_task(f"Close every window except the terminal titled '{keep}'.", steps,
                        {"present": [keep], "count": 1}, oracle)


def windows_focus(rng: random.Random) -> dict[str, Any]:
    titles, steps = _windows(rng)
    t = rng.choice(titles[:-1])  # the last one opened has the focus already
    return _window_task(f"Switch to the terminal window titled '{t}' so that it has the keyboard focus.", steps,
                        {"focused": t}, [op("click_window", title=t)])


def windows_maximize(rng: random.Random) -> dict[str, Any]:
    titles, steps = _windows(rng, (1, 4))
    t = rng.choice(titles)
    return _window_task(f"Maximize the terminal window titled '{t}'.", steps, {"maximized": [t]},
                        [op("click_window", title=t, anchor="top_right", dx=-26, dy=-11)])


def windows_minimize(rng: random.Random) -> dict[str, Any]:
    titles, steps = _windows(rng, (1, 4))
    t = rng.choice(titles)
    return _window_task(f"Minimize (iconify) the terminal window titled '{t}'.", steps, {"minimized": [t]},
                        [op("click_window", title=t, anchor="top_right", dx=-42, dy=-11)])


# ---- infeasible -------------------------------------------------------------------------------
MISSING_APPS = {"GIMP": "gimp", "Firefox": "firefox", "VLC": "vlc", "Thunderbird": "thunderbird",
                "LibreOffice Writer": "soffice", "Inkscape": "inkscape", "Blender": "blender", "Spotify": "spotify",
                "Zoom": "zoom", "Slack": "slack", "Audacity": "audacity", "Krita": "krita", "Steam": "steam",
                "Visual Studio Code": "code", "Discord": "discord", "OBS Studio": "obs"}
APP_ACTIONS = ["open a new blank document", "create a new project named {n}", "open the file ~/Documents/{n}.dat",
               "export ~/Desktop/{n} as a PDF", "start a recording called {n}"]


def _infeasible(instruction: str, probe: str) -> dict[str, Any]:
    return {"instruction": instruction, "related_apps": ["xterm"], "config": XTERM,
            "evaluator": {"func": "infeasible"},
            "oracle": [CLICK_XTERM, op("type", text=probe + "\n"), op("fail")]}


def infeasible_missing_app(rng: random.Random) -> dict[str, Any]:
    app = rng.choice(sorted(MISSING_APPS))
    action = rng.choice(APP_ACTIONS).format(n=rng.choice(NAMES))
    return _infeasible(f"Open {app} and {action}.", f"which {MISSING_APPS[app]} || echo not installed")


def infeasible_resolution(rng: random.Random) -> dict[str, Any]:
    w, h, label = rng.choice([(7680, 4320, "8K"), (15360, 8640, "16K"), (10240, 4320, "10K ultrawide"),
                              (5120, 2880, "5K"), (6016, 3384, "6K")])
    hz = rng.choice([60, 75, 100, 120, 144, 165, 240, 360])
    scale = rng.choice([100, 125, 150, 175, 200, 250, 300])
    return _infeasible(f"Set the screen resolution to {w}x{h} ({label}) at {hz} Hz with {scale}% scaling.",
                       "xdpyinfo | grep dimensions")


def infeasible_wifi(rng: random.Random) -> dict[str, Any]:
    ssid = f"{rng.choice(WORDS).title()}{rng.choice(['Net', 'WiFi', '-5G', 'Home', 'Guest'])}{rng.randint(1, 99)}"
    pw = f"{rng.choice(WORDS)}{rng.randint(1000, 9999)}"
    return _infeasible(f"Connect this computer to the Wi-Fi network '{ssid}' with the password '{pw}'.",
                       "ls /sys/class/net")


def infeasible_printer(rng: random.Random) -> dict[str, Any]:
    brand, room = rng.choice(["HP", "Canon", "Brother", "Epson"]), rng.choice(["Office", "Lab", "Hall"])
    printer = f"{brand}-{room}-{rng.randint(1, 9)}"
    return _infeasible(f"Print ~/Documents/{rng.choice(NAMES)}.txt on the printer {printer}, "
                       f"{rng.randint(1, 5)} copies.", "lpstat -p || echo no printing system")


# The first three are the suite's historical tasks, so a 3-episode recipe still collects those.
TEMPLATES: list[Template] = [
    Template("terminal-create-file", "terminal", "create a file with one line of text", terminal_create_file),
    Template("terminal-rename-file", "terminal", "rename a file with mv", terminal_rename_file),
    Template("editor-save-text", "editor", "write a line and save as a new file", editor_save_text),
    Template("terminal-make-dirs", "terminal", "create a folder with subfolders", terminal_make_dirs),
    Template("terminal-copy-file", "terminal", "copy a file into a folder", terminal_copy_file),
    Template("terminal-delete-by-extension", "terminal", "delete the .log files of a folder",
             terminal_delete_by_extension),
    Template("terminal-count-lines", "terminal", "write a file's line count to another file", terminal_count_lines),
    Template("terminal-append-line", "terminal", "append a line to a file", terminal_append_line),
    Template("terminal-sort-lines", "terminal", "save a file's lines sorted", terminal_sort_lines),
    Template("terminal-chmod", "terminal", "make a script executable", terminal_chmod),
    Template("terminal-symlink", "terminal", "create a symbolic link", terminal_symlink),
    Template("terminal-archive", "terminal", "pack a folder into a .tar.gz", terminal_archive),
    Template("terminal-replace-word", "terminal", "replace a word throughout a file", terminal_replace_word),
    Template("terminal-find-file", "terminal", "find a file and record its path", terminal_find_file),
    Template("settings-bash-alias", "settings", "add a shell alias to ~/.bashrc", settings_bash_alias),
    Template("settings-bash-env", "settings", "export an environment variable in ~/.bashrc", settings_bash_env),
    Template("settings-xresources", "settings", "add an xterm setting to ~/.Xresources", settings_xresources),
    Template("settings-editor-view", "settings", "turn on text-editor view preferences (menus)",
             settings_editor_view),
    Template("settings-edit-config", "settings", "change an app's .ini setting in the text editor",
             settings_edit_config),
    Template("editor-write-list", "editor", "write a list and save it", editor_write_list),
    Template("editor-append-line", "editor", "add a line at the end of an open file", editor_append_line),
    Template("editor-delete-line", "editor", "delete one line of an open file", editor_delete_line),
    Template("editor-insert-header", "editor", "insert a header line at the top", editor_insert_header),
    Template("editor-save-copy", "editor", "save a copy under a new name (Save As)", editor_save_copy),
    Template("files-rename", "files", "rename a file in the file manager (F2)", files_rename),
    Template("files-create-folder", "files", "create a folder in the file manager", files_create_folder),
    Template("files-trash", "files", "move a file to the trash in the file manager", files_trash),
    Template("files-copy", "files", "copy a file into a subfolder in the file manager", files_copy),
    Template("files-move", "files", "move a file into a subfolder in the file manager", files_move),
    Template("windows-close", "windows", "close one window", windows_close),
    Template("windows-close-others", "windows", "close all windows but one", windows_close_others),
    Template("windows-focus", "windows", "give a window the focus", windows_focus),
    Template("windows-maximize", "windows", "maximize a window", windows_maximize),
    Template("windows-minimize", "windows", "minimize a window", windows_minimize),
    Template("infeasible-missing-app", "infeasible", "use an application that is not installed",
             infeasible_missing_app, infeasible=True),
    Template("infeasible-resolution", "infeasible", "set an impossible screen resolution", infeasible_resolution,
             infeasible=True),
    Template("infeasible-wifi", "infeasible", "join a Wi-Fi network (there is no Wi-Fi)", infeasible_wifi,
             infeasible=True),
    Template("infeasible-printer", "infeasible", "print on a printer (there is none)", infeasible_printer,
             infeasible=True),
]
