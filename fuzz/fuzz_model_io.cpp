// Fuzzes importEnsemble: a safetensors file whose header parses but whose tensors may disagree
// with its metadata (config, widths, members, format_version). An ensemble that loads must
// also predict: its layout, parameters and normalisation agree with each other. A file that
// says it is a checkpoint also goes through readCheckpoint (optimizer tensors, update counts,
// curves), whose state must fit its layout.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "io/checkpoint.h"
#include "io/model_io.h"

using namespace ensemble;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    LoadedEnsemble e;
    try {
        const SafetensorsFile file = parseSafetensors(bytes, "fuzz.safetensors");
        if (isCheckpoint(file)) {
            try {
                const Checkpoint c = readCheckpoint(file);
                const std::size_t k = static_cast<std::size_t>(c.ensemble.layout.members());
                fuzz::check(c.state.params.size() == c.ensemble.layout.size() &&
                                c.state.optimizer.moment1.size() == c.state.params.size() &&
                                c.state.optimizer.moment2.size() == c.state.params.size(),
                            "the checkpoint's state fits its layout");
                fuzz::check(c.state.diverged.size() == k, "one diverged flag per member");
                for (const Evaluation& ev : c.curves) {
                    fuzz::check(ev.members.size() == k, "curves hold every member");
                }
            } catch (const Error&) {
            }
        }
        e = importEnsemble(file);
    } catch (const Error&) {
        return 0;
    }
    const int64_t d = e.layout.inputs();
    fuzz::check(e.params.size() == e.layout.size(), "params match the layout");
    fuzz::check(static_cast<int64_t>(e.normalization.mean.size()) == d &&
                    static_cast<int64_t>(e.normalization.std.size()) == d,
                "normalisation has one entry per input");
    fuzz::check(e.diverged.size() == static_cast<std::size_t>(e.layout.members()),
                "one diverged flag per member");
    // Predicting costs K x params; a fuzzer's small inputs keep it cheap, but skip the rare big
    // one rather than time out on it.
    if (e.layout.size() <= (std::size_t{1} << 16)) {
        const std::vector<float> x(static_cast<std::size_t>(d), 0.5f);
        const std::vector<float> out = predictLogProbs(e, x.data(), 1, 1);
        fuzz::check(out.size() == static_cast<std::size_t>(e.layout.members()) *
                                      static_cast<std::size_t>(e.layout.classes()),
                    "one log-probability per member and class");
    }
    return 0;
}
