#pragma once

// Iso-lines of a scalar field sampled on a G x G grid of cell centres (marching squares):
// the 0.5 contour of p(class 1), or the decision boundaries of several classes.

#include <QLineF>
#include <QPolygonF>

#include <functional>
#include <vector>

namespace ensemble::ui {

// Segments where value(r, c) crosses `level`, in grid units: the centre of cell (r, c) is at
// (c + 0.5, r + 0.5), so the grid spans [0, G] x [0, G] with row 0 at the top. Saddle cells
// are split by the mean of their corners. Precondition: size >= 2 for any output.
std::vector<QLineF> contourSegments(const std::function<double(int r, int c)>& value, int size,
                                    double level);

// Chains segments that share end points into polylines (so dash patterns run along a whole
// line instead of restarting on every cell).
std::vector<QPolygonF> joinSegments(const std::vector<QLineF>& segments);

// The decision boundaries of a C-class probability field probs[(r*G + c)*C + class] (stride
// `pointStride` between points, default C): the 0.5 contour of p(class 1) for two classes;
// otherwise, for each class, the zero contour of p_class - max of the others.
std::vector<QLineF> decisionBoundary(const float* probs, int size, int classes);
std::vector<QLineF> decisionBoundary(const double* probs, int size, int classes);

}  // namespace ensemble::ui
