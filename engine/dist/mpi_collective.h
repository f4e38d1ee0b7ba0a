#pragma once

// The Collective over MPI (built only with ENSEMBLE_MPI; the target engine_mpi).

#include <memory>

#include "dist/collective.h"

namespace ensemble {

// Initialises MPI (MPI_THREAD_FUNNELED: OpenMP threads never call MPI) and returns the world's
// collective; MPI is finalised when it is destroyed. Returns null without initialising anything
// when no MPI launcher started this process (launcherRank() < 0): a plain run stays a plain
// process. Throws RuntimeError when MPI_Init fails.
std::unique_ptr<Collective> startMpi(int* argc, char*** argv);

// Sets the mesh of a world collective made by startMpi (E x D must be its rank count).
void setMpiMesh(Collective& world, Mesh mesh);

}  // namespace ensemble
