#pragma once

// Colour maps of the heatmaps and the class colours of points. Pure functions of a value, so
// the worker thread colours images and the GUI thread draws colour bars with the same maps.

#include <QColor>
#include <QImage>
#include <QRgb>

#include <functional>

namespace ensemble::ui {

// Two classes: p(class 1) in [0, 1] from class 0's blue through a light neutral at 0.5 to
// class 1's red (ColorBrewer RdBu, lightened so the points stay visible on top).
QRgb divergingColor(double t);

// Uncertainty maps: t in [0, 1] along viridis (perceptually uniform, readable in greyscale).
QRgb sequentialColor(double t);

// The colour of class `c` among `classes` (points, legends, class-coloured maps).
QColor classColor(int c, int classes);

// More than two classes: the predicted class's colour, its saturation rising with the
// confidence from 1/C (white) to 1 (full colour).
QRgb classConfidenceColor(int c, double confidence, int classes);

// A horizontal or vertical strip of `map` from 0 to 1 (vertical: 1 at the top).
QImage colorStrip(const std::function<QRgb(double)>& map, int length, bool vertical);

}  // namespace ensemble::ui
