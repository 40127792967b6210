"""The ``desktop-basics`` suite: everyday chores in the terminal, the file manager, the text editor,
the window manager and simple settings, plus infeasible requests whose right answer is FAIL.

Every template draws its names, contents, paths and counts from a seeded RNG, and
carries a scripted oracle that solves it through GUI input (clicks, typing and
keys into windows; never the control API's ``/execute``). Oracles wait for windows
instead of sleeping, and prefer the keyboard to pixel-precise clicks.
"""

from __future__ import annotations

from osgym.suites.desktop_basics.editor import (
    editor_append_line,
    editor_delete_line,
    editor_insert_header,
    editor_save_copy,
    editor_save_text,
    editor_write_list,
)
from osgym.suites.desktop_basics.files import (
    files_copy,
    files_create_folder,
    files_move,
    files_rename,
    files_trash,
)
from osgym.suites.desktop_basics.infeasible import (
    infeasible_missing_app,
    infeasible_printer,
    infeasible_resolution,
    infeasible_wifi,
)
from osgym.suites.desktop_basics.settings import (
    settings_bash_alias,
    settings_bash_env,
    settings_edit_config,
    settings_editor_view,
    settings_xresources,
)
from osgym.suites.desktop_basics.terminal import (
    terminal_append_line,
    terminal_archive,
    terminal_chmod,
    terminal_copy_file,
    terminal_count_lines,
    terminal_create_file,
    terminal_delete_by_extension,
    terminal_find_file,
    terminal_make_dirs,
    terminal_rename_file,
    terminal_replace_word,
    terminal_sort_lines,
    terminal_symlink,
)
from osgym.suites.desktop_basics.windows import (
    windows_close,
    windows_close_others,
    windows_focus,
    windows_maximize,
    windows_minimize,
)
from osgym.suites.generators import Template

NAME = "desktop-basics"
DESCRIPTION = "Everyday desktop chores: terminal, file manager, text editor, windows, settings; some infeasible."

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
