#pragma once

// Data shipped with the program: the UCI regression tables of the Deep Ensembles benchmark
// (resources/data/uci in the source tree). They are installed under
// share/ensemblelab/data/uci and copied into the build tree at the same place relative to its
// programs, so a program finds them beside itself, built or installed, with no source-tree path
// compiled in; the environment variable ENSEMBLE_DATA_DIR (the folder that holds uci/) comes
// first when set.

#include <cstdint>
#include <string>
#include <vector>

#include "core/named_enum.h"

namespace ensemble {

struct Dataset;

// The eight UCI sets (`dataset.uci_set`).
enum class UciSet { Concrete, Energy, Kin8nm, Naval, Power, Protein, Wine, Yacht };
inline constexpr std::size_t kUciSetCount = 8;

struct UciSetInfo {
    UciSet value;
    const char* name;    // dataset.uci_set
    const char* label;   // for people (the panel's list)
    const char* file;    // under the data folder
    const char* target;  // the last column
    int64_t rows;        // as resources/data/uci/README.md gives them
    int features;
};

template <>
struct EnumNames<UciSet> {
    // clang-format off
    static constexpr UciSetInfo table[] = {
        {UciSet::Concrete, "concrete", "Concrete strength", "uci/concrete.csv.gz", "strength", 1030, 8},
        {UciSet::Energy, "energy", "Energy (heating load)", "uci/energy.csv.gz", "heating_load", 768, 8},
        {UciSet::Kin8nm, "kin8nm", "Kin8nm (robot arm)", "uci/kin8nm.csv.gz", "y", 8192, 8},
        {UciSet::Naval, "naval", "Naval propulsion", "uci/naval-propulsion-plant.csv.gz", "gt_compressor_decay", 11934, 16},
        {UciSet::Power, "power", "Power plant", "uci/power-plant.csv.gz", "energy_output", 9568, 4},
        {UciSet::Protein, "protein", "Protein structure", "uci/protein-tertiary-structure.csv.gz", "rmsd", 45730, 9},
        {UciSet::Wine, "wine", "Wine quality (red)", "uci/wine-quality-red.csv.gz", "quality", 1599, 11},
        {UciSet::Yacht, "yacht", "Yacht hydrodynamics", "uci/yacht.csv.gz", "residuary_resistance", 308, 6},
    };
    // clang-format on
};
static_assert(tableMatchesEnum<UciSet>(kUciSetCount), "one row per UciSet, in the enum's order");

inline const UciSetInfo& uciSetInfo(UciSet set) {
    return enumRow(set);
}

// The folders searched for shipped data, in order: ENSEMBLE_DATA_DIR alone when it is set and
// not empty; else, for the running program's folder and the two above it, that folder joined
// with the path from the installed bin/ to the installed data folder (../share/ensemblelab/data):
// the installed program finds the first, a program of the build tree (build/tests,
// build/app/cli) one of the others.
std::vector<std::string> bundledDataFolders();
// The same for a program in `programFolder` and the variable's value `override` (null: unset).
std::vector<std::string> bundledDataFoldersFor(const std::string& programFolder,
                                               const char* override);

// The path of the shipped file `relative` ("uci/concrete.csv.gz") in the first folder that
// holds it. Throws DataError listing every folder looked in and how to point at the data.
std::string bundledDataFile(const std::string& relative);

// The UCI set as a regression table: its features, the last column as the target.
Dataset readUciSet(UciSet set);

}  // namespace ensemble
