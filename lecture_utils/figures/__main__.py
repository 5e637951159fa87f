"""`python -m lecture_utils.figures OUT_DIR [NAME ...]`: redraw the images/ figures into OUT_DIR."""

import argparse
from pathlib import Path

from lecture_utils.figures.images import IMAGES, draw_all


def main() -> None:
    parser = argparse.ArgumentParser(description="Redraw the figures under images/.")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("names", nargs="*", help=f"default: all of {sorted(IMAGES)}")
    args = parser.parse_args()
    for path in draw_all(args.out_dir, args.names or None):
        print(path)


if __name__ == "__main__":
    main()
