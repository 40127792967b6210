"""The ``apps-browser`` suite: Chromium on local pages that setup writes (``file://`` URLs): forms, search
within a page, navigation between pages, bookmarks and downloads. Evaluators read the open tabs from
Chromium's DevTools endpoint inside the replica, and the profile's Bookmarks file and ~/Downloads.
Run it on ``tier: apps``."""

from __future__ import annotations

from osgym.suites.apps_browser.pages import (
    web_bookmark_page,
    web_download_file,
    web_find_in_page,
    web_follow_links,
    web_font_size,
    web_table_lookup,
)
from osgym.suites.generators import Template

NAME = "apps-browser"
TIER = "apps"
DESCRIPTION = "Chromium on local pages: look-ups, navigation, bookmarks, downloads (needs tier: apps)."

TEMPLATES: list[Template] = [
    Template("web-table-lookup", "chrome", "find a value in a long table on a page and send it in the page's form",
             web_table_lookup, difficulty=1),
    Template("web-follow-links", "chrome", "go from a site's home page to a section, then to one of its pages",
             web_follow_links, difficulty=2),
    Template("web-bookmark-page", "chrome", "bookmark the open page under a given name", web_bookmark_page,
             difficulty=1),
    Template("web-find-in-page", "chrome", "find an entry in a long page and send a value it gives in the page's form",
             web_find_in_page, difficulty=2),
    Template("web-font-size", "chrome", "set the browser's default font size in its settings", web_font_size,
             difficulty=2),
    Template("web-download-file", "chrome", "download one of several files linked from a page", web_download_file,
             difficulty=1),
]
