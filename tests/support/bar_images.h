#pragma once

// A tiny image problem for the CPU backend's convolutional members: 10x10 images of a
// vertical (class 0) or horizontal (class 1) bright bar at random positions, with noise
// (tst_conv, tst_isa_dispatch).

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "data/dataset.h"

namespace ensemble::test {

inline DataSplit barImages(int trainRows, int testRows, uint64_t seed) {
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::uniform_int_distribution<int> pos(1, 8);
    std::normal_distribution<float> noise(0.0f, 20.0f);
    const auto make = [&](int rows) {
        Dataset d;
        d.rows = rows;
        d.features = 100;
        for (int i = 0; i < 100; ++i) {
            d.featureNames.push_back("px" + std::to_string(i));
        }
        for (int r = 0; r < rows; ++r) {
            const int label = static_cast<int>(rng() % 2);
            const int at = pos(rng);
            for (int yy = 0; yy < 10; ++yy) {
                for (int xx = 0; xx < 10; ++xx) {
                    const bool on = label == 0 ? xx == at : yy == at;
                    d.x.push_back(std::clamp((on ? 200.0f : 30.0f) + noise(rng), 0.0f, 255.0f));
                }
            }
            d.y.push_back(label);
        }
        return d;
    };
    DataSplit s;
    s.name = "bars";
    s.classes = 2;
    s.isImage = true;
    s.imageWidth = 10;
    s.imageHeight = 10;
    s.train = make(trainRows);
    s.test = make(testRows);
    s.normalization = Normalization::identity(100, 255.0f);
    return s;
}

// The small CNN both suites train on those images: conv 4@3x3, max-pool 2, dense 8, K = 3.
inline nlohmann::json barCnnConfig(int steps) {
    return nlohmann::json{
        {"dataset", {{"kind", "mnist"}}},
        {"model",
         {{"kind", "cnn"},
          {"layers", nlohmann::json::array({{{"type", "conv"}, {"filters", 4}, {"kernel", 3}},
                                            {{"type", "pool"}, {"kind", "max"}, {"size", 2}},
                                            {{"type", "dense"}, {"units", 8}}})}}},
        {"ensemble", {{"members", 3}, {"seed", 7}}},
        {"optimizer", {{"kind", "adam"}, {"lr", 0.01}}},
        {"training", {{"batch_size", 40}, {"steps", steps}, {"eval_every", 0}}},
        {"backend", {{"kind", "cpu"}}}};
}

}  // namespace ensemble::test
