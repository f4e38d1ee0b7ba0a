#!/usr/bin/env python3
"""The reference image shifts for tst_shift_interop.

    shift_reference.py IMAGES.f32 COUNT OUT_DIR

IMAGES.f32 holds COUNT 28x28 float32 images on the 0..1 scale, row-major, rows top-down. For
every angle in ANGLES writes rotate_<angle>.f32, scipy.ndimage.rotate(img, angle,
reshape=False, order=1, mode='constant', cval=0) of each image (float64, stored as float32);
for every shift in SHIFTS writes roll_<shift>.f32, numpy.roll(img, shift, axis=1)."""
import sys

import numpy
import scipy.ndimage

ANGLES = [0, 15, 30, 45, 60, 75, 90, 105, 120, 135, 150, 165, 180, -30, 37.5]
SHIFTS = [0, 2, 5, 14, 28, -3]


def main():
    path, count, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    images = numpy.fromfile(path, dtype=numpy.float32).reshape(count, 28, 28)
    images = images.astype(numpy.float64)
    for angle in ANGLES:
        rotated = numpy.stack([
            scipy.ndimage.rotate(img, angle, reshape=False, order=1, mode="constant", cval=0.0)
            for img in images
        ])
        rotated.astype(numpy.float32).tofile(f"{out}/rotate_{angle}.f32")
    for shift in SHIFTS:
        rolled = numpy.stack([numpy.roll(img, shift, axis=1) for img in images])
        rolled.astype(numpy.float32).tofile(f"{out}/roll_{shift}.f32")
    # rot90 itself, for the closed form the issue states (90 degrees is rot90(img, 1)).
    numpy.stack([numpy.rot90(img, 1) for img in images]).astype(numpy.float32).tofile(
        f"{out}/rot90.f32")


if __name__ == "__main__":
    main()
