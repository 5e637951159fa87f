"""Every figure of the notes: the style they share (style.py) and one drawing module per topic.

Topic modules compute; these draw what they compute, and no other module draws. The
figures stored under images/ are listed in images.py; `python -m lecture_utils.figures images`
(what `make figures` runs) redraws them, and the notebooks call the same functions.
"""
