#pragma once

// MC dropout on the UCI sets (issue 49): Gal & Ghahramani 2016's Table 1 column as published,
// the registry row `mc-dropout-uci` that reruns it with the engine's mc_dropout on Deep
// Ensembles' splits, and the two tables' columns set beside each other.

#include <string>
#include <vector>

#include "reproduce/reproduce.h"

namespace ensemble::reproduce {

// One set's line of Gal & Ghahramani 2016, Table 1 (Dropout), as printed: RMSE and the test
// log-likelihood (higher is better), each ± its standard error over the splits.
struct GalUciLine {
    const char* set;
    const char* rmse;
    const char* rmseSe;
    const char* testLl;
    const char* testLlSe;
    // The dropout rate the row's runs use on this set (docs/reproductions.md: chosen by
    // validation NLL on the training rows, Gal's grid).
    double dropout;
};

// The eight sets of Deep Ensembles' table, in its order.
const std::vector<GalUciLine>& galUciTable1();

// Where the column is printed, for every check and beside entry that quotes it.
extern const char* const kGalTable1Source;

// The ensemble's members K of the row's runs: K fixed masks of the one trained network.
inline constexpr int kMcDropoutUciMasks = 50;

// The row `mc-dropout-uci`: the UCI runner under ensemble.method mc_dropout (configPatch),
// judged against Gal & Ghahramani's column (the NLL as the negated test log-likelihood).
Reproduction mcDropoutUci();

// Inserts mcDropoutUci() after `deep-ensembles-uci` in `rows` and sets each table's published
// column beside the other's checks: MC dropout's beside Deep Ensembles' RMSE and NLL, Deep
// Ensembles' beside MC dropout's. Rows without `deep-ensembles-uci` are left as they are.
void addMcDropoutUci(std::vector<Reproduction>& rows);

}  // namespace ensemble::reproduce
