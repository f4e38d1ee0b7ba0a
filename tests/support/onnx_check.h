#pragma once

// ONNX's own C++ checker for the tests that write ONNX models (tst_export, tst_interop): the
// same library the exporter uses, run on the file as written, independently of the writer.

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <QString>

#include <exception>
#include <fstream>
#include <string>

namespace ensemble::test {

// The model at `file` as protobuf; false if it does not parse.
inline bool readOnnx(const QString& file, onnx::ModelProto& model) {
    std::ifstream in(file.toStdString(), std::ios::binary);
    return in && model.ParseFromIstream(&in);
}

// check_model on the file (external data is looked up beside it, as readers do) and strict
// shape inference with type checks. Empty when both pass, else what failed.
inline QString onnxCheckFailure(const QString& file) {
    try {
        onnx::checker::check_model(file.toStdString());
        onnx::ModelProto model;
        if (!readOnnx(file, model)) {
            return file + QStringLiteral(": not an ONNX model");
        }
        onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(/*check_type=*/true,
                                                                       /*strict_mode=*/1));
    } catch (const std::exception& e) {
        return file + QStringLiteral(": ") + QString::fromUtf8(e.what());
    }
    return {};
}

}  // namespace ensemble::test
