#pragma once

// A tiny generated MNIST in IDX files (tst_reproduce_mnist, tst_reproduce_active,
// tst_gui_methods): 28 x 28
// images, label i mod 10, each a bright 6 x 6 block whose place follows its label, over a faint
// pattern of the image's number (so rotations and translations move it). Point XDG_DATA_HOME at
// the folder above ensemblelab/mnist and the engine reads them as MNIST.

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <QtCore/QDir>
#include <QtCore/QString>

namespace ensemble::test {

inline constexpr int kTinyMnistSide = 28;

// `v` as 4 big-endian bytes (the IDX header's integers).
inline std::string be32(uint32_t v) {
    std::string s(4, '\0');
    for (int i = 0; i < 4; ++i) {
        s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
    }
    return s;
}

// `count` images and their labels into `folder`'s files `images` and `labels`; `salt` varies
// the faint pattern (the test images apart from the training ones).
inline void writeTinyMnist(const QString& folder, const char* images, const char* labels, int count,
                           int salt) {
    constexpr int kSide = kTinyMnistSide;
    std::string pixels;
    std::string classes;
    for (int i = 0; i < count; ++i) {
        const int label = i % 10;
        classes += static_cast<char>(label);
        for (int r = 0; r < kSide; ++r) {
            for (int c = 0; c < kSide; ++c) {
                const bool block =
                    r >= 2 + 2 * label && r < 8 + 2 * label && c >= 3 + label && c < 9 + label;
                pixels += static_cast<char>(block ? 250 : (7 * i + 3 * r + c + salt) % 40);
            }
        }
    }
    std::ofstream(QDir(folder).filePath(images).toStdString(), std::ios::binary)
        << be32(0x803) + be32(static_cast<uint32_t>(count)) + be32(kSide) + be32(kSide) + pixels;
    std::ofstream(QDir(folder).filePath(labels).toStdString(), std::ios::binary)
        << be32(0x801) + be32(static_cast<uint32_t>(count)) + classes;
}

// MNIST's four files in `folder` (made if missing): `trainRows` training and `testRows` test
// images. False when the folder cannot be made.
inline bool writeTinyMnistFolder(const QString& folder, int trainRows, int testRows) {
    if (!QDir().mkpath(folder)) {
        return false;
    }
    writeTinyMnist(folder, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", trainRows, 0);
    writeTinyMnist(folder, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", testRows, 11);
    return true;
}

// Gal et al.'s active study (gal-2017-active, mnist-active-cnn) in a fraction of a second on
// these images (tst_reproduce_active, tst_gui_methods), as --set overrides: a tiny CNN, two
// members, 20 + 3 x 5 labels, enough steps (at lr 0.01, no decay) that the mean curves reach 90
// % on a folder of kTinyActiveTrainRows and kTinyActiveTestRows images.
inline constexpr int kTinyActiveTrainRows = 64;
inline constexpr int kTinyActiveTestRows = 30;

inline std::vector<std::string> tinyActiveStudy() {
    return {R"(model.layers=[{"type":"conv","filters":4,"kernel":3,"padding":"valid"},)"
            R"({"type":"pool","kind":"max","size":4},{"type":"dense","units":16}])",
            "ensemble.members=2",
            "active.steps=30",
            "active.epochs=0",
            "optimizer.lr=0.01",
            "optimizer.weight_decay=0",
            "active.per_round=5",
            "active.rounds=3",
            "active.pool_subset=0",
            "training.batch_size=16"};
}

}  // namespace ensemble::test
