"""The ``apps-images`` suite: GIMP on pictures that setup draws; the exported file's size and pixels are
compared with the expected picture (OSWorld's ``check_image_size`` and ``check_structure_sim``).
Run it on ``tier: apps``."""

from __future__ import annotations

from osgym.suites.apps_images.gimp import img_crop, img_flip, img_rotate, img_scale
from osgym.suites.generators import Template

NAME = "apps-images"
TIER = "apps"
DESCRIPTION = "GIMP: scale, rotate, crop and flip a picture, export it as PNG or JPEG (needs tier: apps)."

TEMPLATES: list[Template] = [
    Template("img-scale", "gimp", "scale a picture to a width, keeping its proportions, and export it", img_scale,
             difficulty=2),
    Template("img-rotate", "gimp", "rotate a picture by 90 degrees and export it", img_rotate, difficulty=2),
    Template("img-crop", "gimp", "crop a picture to its content, removing the plain border, and export it",
             img_crop, difficulty=2),
    Template("img-flip", "gimp", "flip a picture and export it in another format", img_flip, difficulty=2),
]
