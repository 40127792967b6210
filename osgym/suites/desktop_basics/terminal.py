"""desktop-basics templates: terminal."""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.desktop_basics.common import (
    CLICK_XTERM,
    DIRS,
    DONE,
    NAMES,
    SUBFOLDERS,
    WORDS,
    XTERM,
    _file,
    _lines,
    _words,
)
from osgym.suites.generators import (
    cmd,
    execute,
    op,
    rule,
    vm_file,
    write_file,
)


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
