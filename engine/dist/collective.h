#pragma once

// What the trainer needs from the other processes of a run (docs/scaling.md). The base
// class is a run of one process: every call returns at once and a gather returns its input, so
// a trainer without MPI pays nothing. dist/mpi_collective.h implements it over MPI (built only
// with ENSEMBLE_MPI). Every call is collective: all ranks make the same calls in the same order.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ensemble {

// Global members [begin, end) of an ensemble.
struct MemberRange {
    int begin = 0;
    int end = 0;
    int count() const { return end - begin; }
};

// The share of group `group` of `groups` in an ensemble of `members`: [gK/G, (g+1)K/G), so
// shares differ by at most one member and are in member order.
inline MemberRange memberShare(int members, int groups, int group) {
    const auto at = [&](int g) {
        return static_cast<int>(static_cast<int64_t>(g) * members / groups);
    };
    return {at(group), at(group + 1)};
}

// The mesh a run trains on: E ranks on the ensemble axis times D on the data axis.
struct Mesh {
    int ensemble = 1;
    int data = 1;
};

class Collective {
  public:
    virtual ~Collective() = default;

    virtual int rank() const { return 0; }   // this process, in the world
    virtual int ranks() const { return 1; }  // the world's size
    bool root() const { return rank() == 0; }
    bool distributed() const { return ranks() > 1; }
    virtual Mesh mesh() const { return {}; }
    // This rank's coordinates: on the ensemble axis (its group of members) and on the data
    // axis (its replica in the group). Rank r is (r / D, r % D).
    virtual int ensembleIndex() const { return 0; }
    virtual int dataIndex() const { return 0; }
    // This rank among the ranks on its machine (MPI_COMM_TYPE_SHARED): picks its GPU.
    virtual int localRank() const { return 0; }
    // Whether this rank reports its group's members (gathers, loss sums): replica 0 of a group.
    bool groupLeader() const { return dataIndex() == 0; }

    // Element-wise sum of n values over every rank, reduced in rank order: the same bits on
    // every rank and in every run.
    virtual void sum(double* values, int n) {
        (void)values;
        (void)n;
    }
    // Element-wise sum of n floats over the D ranks of this rank's data-axis group, the pmean
    // of gradients' allreduce: a reduce-scatter and an allgather in which each element is
    // summed in rank order (in double, rounded once), so every replica gets the same bits in
    // every run. A collective call of the group's ranks only. D = 1: nothing.
    virtual void sumDataAxis(float* values, std::size_t n) {
        (void)values;
        (void)n;
    }
    // The largest value over every rank (on every rank).
    virtual double max(double value) { return value; }
    // The concatenation of every rank's `local` in rank order, on rank 0 (empty elsewhere).
    virtual std::vector<float> gather(const std::vector<float>& local) { return local; }
    virtual std::vector<uint8_t> gather(const std::vector<uint8_t>& local) { return local; }
    // Every rank's text, in rank order, on rank 0 (empty elsewhere).
    virtual std::vector<std::string> gatherText(const std::string& local) { return {local}; }
    // Every rank waits for the others.
    virtual void barrier() {}
    // The launcher is ending the job (it passed on a signal): finishing MPI would wait for it
    // forever, so the process ends without it, after its last collective call.
    virtual void leaveWithoutFinalize() {}
    // Ends every process of the job now with `code` (a failure after which the ranks can no
    // longer agree: a file rank 0 could not write while the others wait). One process: exit.
    [[noreturn]] virtual void abort(int code);
};

// The single-process collective (a shared instance; stateless).
Collective& singleProcess();

// This process's rank and the job's size as an MPI launcher (mpirun/mpiexec, srun) announced
// them in the environment (Open MPI's OMPI_COMM_WORLD_*, PMI_*, PMIx's PMIX_RANK), read without
// initialising MPI; -1 and 0 when no launcher started this process.
int launcherRank();
int launcherSize();

}  // namespace ensemble
