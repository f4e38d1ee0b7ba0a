// An ensemble as one ONNX model (its graph from onnx_graph.h), checked by ONNX's checker and
// shape inference, written self-contained or with its tensors in an external data file. The
// writer lays out the graph's initializers: inline, or page-aligned in a data file named after
// its bytes.
#include "io/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <regex>
#include <set>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/errors.h"
#include "io/onnx_graph.h"
#include "math/likelihood.h"
#include "math/loss.h"
#include "model/dropout_masks.h"
#include "sys/atomic_file.h"

#ifndef ENSEMBLE_VERSION
#define ENSEMBLE_VERSION "unknown"
#endif

namespace ensemble {

namespace {

constexpr int64_t kIrVersion8 = 8;
constexpr int64_t kOpset = 17;
// Offsets in the data file are page-aligned so that readers (ONNX Runtime) can map tensors.
constexpr uint64_t kDataAlignment = 4096;

// The model's identity, its graph's name and the export's metadata.
void describeModel(onnx::ModelProto& model, const LoadedEnsemble& ensemble,
                   const SafetensorsFile& file) {
    const int64_t k = ensemble.layout.members();
    const int64_t d = ensemble.layout.inputs();
    model.set_ir_version(kIrVersion8);
    model.set_producer_name("EnsembleLab");
    model.set_producer_version(ENSEMBLE_VERSION);
    model.set_domain("ensemblelab");
    model.set_model_version(1);
    model.set_doc_string("An ensemble of " + std::to_string(k) +
                         " members trained with EnsembleLab; input x: raw features [N, " +
                         std::to_string(d) + "]; outputs as `ensemble-cli predict` writes them.");
    onnx::GraphProto& graph = *model.mutable_graph();
    graph.set_name("ensemble");
    graph.set_doc_string("dataset " + ensemble.datasetName + ", step " +
                         std::to_string(ensemble.step));
    onnx::OperatorSetIdProto& opset = *model.add_opset_import();
    opset.set_domain("");
    opset.set_version(kOpset);
    const auto entry = [&](const std::string& key, const std::string& value) {
        onnx::StringStringEntryProto& e = *model.add_metadata_props();
        e.set_key(key);
        e.set_value(value);
    };
    for (const auto& [key, value] : file.metadata) {
        entry(key, value);
    }
    if (file.metadata.count("ensemblelab_version") == 0) {
        entry("ensemblelab_version", ENSEMBLE_VERSION);
    }
}

[[noreturn]] void checkerFailed(const std::exception& e) {
    throw RuntimeError(
        "onnx: the model built for this ensemble fails ONNX's checker (a bug in "
        "EnsembleLab; export safetensors or npz instead): " +
        std::string(e.what()));
}

// Strict shape inference (every node's types and shapes consistent) on a copy, so the model
// written carries no inferred value_info. Needs no weight data, only the small constants.
void inferShapes(const onnx::ModelProto& model) {
    try {
        onnx::ModelProto copy = model;
        onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(/*check_type=*/true,
                                                                       /*strict_mode=*/1));
    } catch (const std::exception& e) {
        checkerFailed(e);
    }
}

void serialize(const onnx::ModelProto& model, std::ostream& out) {
    if (!model.SerializeToOstream(&out) && out) {
        throw RuntimeError("onnx: protobuf could not serialise the model");
    }
}

// FNV-1a, 64 bits: names the data file after its bytes.
class Fnv64 {
  public:
    void add(std::string_view bytes) {
        for (const char c : bytes) {
            m_hash = (m_hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
        }
    }
    void add(uint64_t v) {
        char b[8];
        std::memcpy(b, &v, 8);
        add(std::string_view(b, 8));
    }
    std::string hex() const {
        char text[17];
        std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(m_hash));
        return text;
    }

  private:
    uint64_t m_hash = 0xcbf29ce484222325ULL;
};

// "<model>.<16 hex digits>.data": the names this writer gives data files beside `model`.
bool isOurDataFile(const std::string& location, const std::string& modelName) {
    static const std::regex kTag("[0-9a-f]{16}\\.data");
    return location.starts_with(modelName + ".") &&
           std::regex_match(location.substr(modelName.size() + 1), kTag);
}

// The data files of ours that the model now at `path` refers to, to remove once a new model
// has replaced it. None for a new name, a stream or a self-contained model (which may be up to
// 2 GiB, and is not read).
std::set<std::filesystem::path> dataFilesAt(const std::string& path) {
    std::set<std::filesystem::path> found;
    const OutputTarget target = resolveOutputPath(path);
    std::error_code ec;
    if (target.kind != OutputTarget::Kind::Atomic ||
        !std::filesystem::is_regular_file(target.file, ec) ||
        std::filesystem::file_size(target.file, ec) > (uint64_t{64} << 20) || ec) {
        return found;
    }
    onnx::ModelProto old;
    try {
        if (!old.ParseFromString(readFile(target.file))) {
            return found;
        }
    } catch (const Error&) {
        return found;
    }
    const std::filesystem::path modelFile(target.file);
    const std::string name = modelFile.filename().string();
    for (const onnx::TensorProto& t : old.graph().initializer()) {
        for (const onnx::StringStringEntryProto& e : t.external_data()) {
            if (e.key() == "location" && isOurDataFile(e.value(), name)) {
                found.insert(modelFile.parent_path() / e.value());
            }
        }
    }
    return found;
}

// Best effort: the new model is in place and complete either way.
void removeDataFiles(const std::set<std::filesystem::path>& files,
                     const std::filesystem::path& keep = {}) {
    for (const std::filesystem::path& f : files) {
        if (f != keep) {
            std::error_code ec;
            std::filesystem::remove(f, ec);
        }
    }
}

// The external-data form: the weights to "<name>.<hash>.data", then the model that refers
// to them, then the old model's data file removed (see onnx_export.h).
void writeExternal(const std::string& path, onnx::ModelProto& model,
                   const std::vector<OnnxWeight>& weights) {
    const OutputTarget target = resolveOutputPath(path);
    if (target.kind != OutputTarget::Kind::Atomic) {
        throw RuntimeError(ErrorKind::Io,
                           path +
                               ": cannot write: an ONNX model this large is two files (the "
                               "model and its weights' data file beside it); name a file, "
                               "not a stream or device");
    }
    const std::filesystem::path modelFile(target.file);
    const std::filesystem::path dir = modelFile.parent_path();
    const std::string modelName = modelFile.filename().string();

    std::vector<uint64_t> offsets;
    uint64_t end = 0;
    Fnv64 hash;
    for (const OnnxWeight& w : weights) {
        const uint64_t offset = (end + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
        offsets.push_back(offset);
        hash.add(offset);
        hash.add(w.bytes);
        end = offset + w.bytes.size();
    }
    const std::string location = modelName + "." + hash.hex() + ".data";
    for (std::size_t i = 0; i < weights.size(); ++i) {
        onnx::TensorProto& t = *weights[i].tensor;
        t.set_data_location(onnx::TensorProto::EXTERNAL);
        const auto entry = [&](const char* key, const std::string& value) {
            onnx::StringStringEntryProto& e = *t.add_external_data();
            e.set_key(key);
            e.set_value(value);
        };
        entry("location", location);
        entry("offset", std::to_string(offsets[i]));
        entry("length", std::to_string(weights[i].bytes.size()));
    }
    inferShapes(model);

    const std::set<std::filesystem::path> oldData = dataFilesAt(path);
    const std::filesystem::path dataFile = dir / location;
    std::error_code ec;
    // Same name, same bytes: a data file already there is this one (an unchanged re-export).
    const bool dataExisted = std::filesystem::exists(dataFile, ec);
    writeFileAtomic(dataFile.string(), [&](std::ostream& out) {
        uint64_t at = 0;
        const std::string padding(kDataAlignment, '\0');
        for (std::size_t i = 0; i < weights.size(); ++i) {
            out.write(padding.data(), static_cast<std::streamsize>(offsets[i] - at));
            out.write(weights[i].bytes.data(),
                      static_cast<std::streamsize>(weights[i].bytes.size()));
            at = offsets[i] + weights[i].bytes.size();
        }
    });
    try {
        // check_model(ModelProto) would look for the data file from the working directory. This
        // is what it runs, with the model's directory in the context as check_model(path) has.
        try {
            onnx::checker::CheckerContext ctx;
            ctx.set_ir_version(static_cast<int>(model.ir_version()));
            ctx.set_opset_imports({{"", static_cast<int>(kOpset)}});
            ctx.set_model_dir(dir.empty() ? std::string(".") : dir.string());
            onnx::checker::LexicalScopeContext lexical;
            onnx::checker::check_graph(model.graph(), ctx, lexical);
        } catch (const std::exception& e) {
            checkerFailed(e);
        }
        writeFileAtomic(path, [&](std::ostream& out) { serialize(model, out); });
    } catch (...) {
        if (!dataExisted) {
            std::filesystem::remove(dataFile, ec);
        }
        throw;
    }
    removeDataFiles(oldData, dataFile);
}

}  // namespace

void writeOnnx(const std::string& path, const SafetensorsFile& file, const OnnxOptions& options) {
    const LoadedEnsemble ensemble = importEnsemble(file);
    onnx::ModelProto model;
    const std::vector<OnnxWeight> weights = buildOnnxModel(model, ensemble, file);
    describeModel(model, ensemble, file);
    uint64_t bytes = 0;
    for (const OnnxWeight& w : weights) {
        bytes += w.bytes.size();
    }
    if (bytes > options.externalDataAbove) {
        writeExternal(path, model, weights);
        return;
    }
    inferShapes(model);
    for (const OnnxWeight& w : weights) {
        w.tensor->set_raw_data(w.bytes.data(), w.bytes.size());
    }
    try {
        onnx::checker::check_model(model);
    } catch (const std::exception& e) {
        checkerFailed(e);
    }
    const std::set<std::filesystem::path> oldData = dataFilesAt(path);
    writeFileAtomic(path, [&](std::ostream& out) { serialize(model, out); });
    removeDataFiles(oldData);
}

}  // namespace ensemble
