#include "dist/mpi_collective.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "core/errors.h"
#include "core/exit_codes.h"

namespace ensemble {

namespace {

void check(int rc, const char* what) {
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int length = 0;
        MPI_Error_string(rc, text, &length);
        throw RuntimeError(std::string("MPI: ") + what + " failed: " + std::string(text, length));
    }
}

class MpiCollective final : public Collective {
  public:
    MpiCollective() {
        check(MPI_Comm_rank(MPI_COMM_WORLD, &m_rank), "MPI_Comm_rank");
        check(MPI_Comm_size(MPI_COMM_WORLD, &m_ranks), "MPI_Comm_size");
        m_mesh = {m_ranks, 1};
        // The ranks sharing this machine, in world order (every rank constructs this).
        MPI_Comm node = MPI_COMM_NULL;
        check(
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, m_rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
        check(MPI_Comm_rank(node, &m_localRank), "MPI_Comm_rank");
        MPI_Comm_free(&node);
    }
    ~MpiCollective() override {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized && !m_leaveWithoutFinalize) {
            if (m_dataComm != MPI_COMM_NULL) {
                MPI_Comm_free(&m_dataComm);
            }
            MPI_Finalize();
        }
    }
    MpiCollective(const MpiCollective&) = delete;
    MpiCollective& operator=(const MpiCollective&) = delete;

    int rank() const override { return m_rank; }
    int ranks() const override { return m_ranks; }
    Mesh mesh() const override { return m_mesh; }
    int ensembleIndex() const override { return m_rank / m_mesh.data; }
    int dataIndex() const override { return m_rank % m_mesh.data; }
    int localRank() const override { return m_localRank; }
    void setMesh(Mesh mesh) {
        if (mesh.ensemble * mesh.data != m_ranks) {
            throw std::invalid_argument("setMpiMesh: the mesh does not cover the ranks");
        }
        m_mesh = mesh;
    }

    void sumDataAxis(float* values, std::size_t n) override {
        const int d = m_mesh.data;
        if (d <= 1 || n == 0) {
            return;
        }
        if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
            throw RuntimeError("MPI: a gradient of more than 2^31 - 1 values per step");
        }
        if (m_dataComm == MPI_COMM_NULL) {
            // Made at the first step, which every rank reaches (a rank that failed its setup
            // made every rank stop before): the group's ranks in data-axis order.
            check(MPI_Comm_split(MPI_COMM_WORLD, ensembleIndex(), dataIndex(), &m_dataComm),
                  "MPI_Comm_split");
        }
        // Replica j owns elements [jn/D, (j+1)n/D): it receives every replica's part of them
        // (reduce-scatter), sums them in rank order, and the sums are gathered back to all.
        const auto at = [&](int j) {
            return static_cast<int>(static_cast<int64_t>(j) * static_cast<int64_t>(n) / d);
        };
        const int me = dataIndex();
        const int mine = at(me + 1) - at(me);
        std::vector<int> sendCounts(static_cast<std::size_t>(d));
        std::vector<int> sendDispls(static_cast<std::size_t>(d));
        std::vector<int> recvCounts(static_cast<std::size_t>(d), mine);
        std::vector<int> recvDispls(static_cast<std::size_t>(d));
        for (int j = 0; j < d; ++j) {
            sendCounts[static_cast<std::size_t>(j)] = at(j + 1) - at(j);
            sendDispls[static_cast<std::size_t>(j)] = at(j);
            recvDispls[static_cast<std::size_t>(j)] = j * mine;
        }
        m_parts.resize(static_cast<std::size_t>(d) * static_cast<std::size_t>(mine));
        check(MPI_Alltoallv(values, sendCounts.data(), sendDispls.data(), MPI_FLOAT, m_parts.data(),
                            recvCounts.data(), recvDispls.data(), MPI_FLOAT, m_dataComm),
              "MPI_Alltoallv");
        float* own = values + at(me);
        for (int i = 0; i < mine; ++i) {
            double s = 0.0;
            for (int j = 0; j < d; ++j) {
                s += static_cast<double>(m_parts[static_cast<std::size_t>(j) * mine + i]);
            }
            own[i] = static_cast<float>(s);
        }
        check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, values, sendCounts.data(),
                             sendDispls.data(), MPI_FLOAT, m_dataComm),
              "MPI_Allgatherv");
    }

    // Gathered to rank 0, summed there in rank order, broadcast: MPI_Allreduce may reduce in
    // an order that depends on the algorithm it picks.
    void sum(double* values, int n) override {
        std::vector<double> all(m_rank == 0 ? static_cast<std::size_t>(n) * m_ranks : 0);
        check(MPI_Gather(values, n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD),
              "MPI_Gather");
        if (m_rank == 0) {
            for (int i = 0; i < n; ++i) {
                double s = 0.0;
                for (int r = 0; r < m_ranks; ++r) {
                    s += all[static_cast<std::size_t>(r) * n + i];
                }
                values[i] = s;
            }
        }
        check(MPI_Bcast(values, n, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast");
    }

    double max(double value) override {
        double out = value;
        check(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
        return out;
    }

    std::vector<float> gather(const std::vector<float>& local) override {
        return gatherOf(local, MPI_FLOAT);
    }
    std::vector<uint8_t> gather(const std::vector<uint8_t>& local) override {
        return gatherOf(local, MPI_BYTE);
    }

    std::vector<std::string> gatherText(const std::string& local) override {
        const std::vector<uint8_t> bytes(local.begin(), local.end());
        std::vector<int> counts;
        const std::vector<uint8_t> all = gatherOf(bytes, MPI_BYTE, &counts);
        std::vector<std::string> out;
        std::size_t at = 0;
        for (int c : counts) {
            out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(at),
                             all.begin() + static_cast<std::ptrdiff_t>(at + c));
            at += static_cast<std::size_t>(c);
        }
        return out;
    }

    void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
    void leaveWithoutFinalize() override { m_leaveWithoutFinalize = true; }

    [[noreturn]] void abort(int code) override {
        std::fflush(stdout);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
        std::_Exit(code);  // MPI_Abort does not return; this is for the compiler
    }

  private:
    template <typename T>
    std::vector<T> gatherOf(const std::vector<T>& local, MPI_Datatype type,
                            std::vector<int>* countsOut = nullptr) {
        if (local.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
            throw RuntimeError("MPI: a gather of more than 2^31 - 1 elements from one rank");
        }
        const int count = static_cast<int>(local.size());
        std::vector<int> counts(static_cast<std::size_t>(m_ranks), 0);
        check(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
              "MPI_Gather");
        std::vector<int> displs(counts.size(), 0);
        std::vector<T> all;
        if (m_rank == 0) {
            int64_t total = 0;
            for (std::size_t r = 0; r < counts.size(); ++r) {
                if (total > std::numeric_limits<int>::max()) {
                    break;
                }
                displs[r] = static_cast<int>(total);
                total += counts[r];
            }
            if (total > std::numeric_limits<int>::max()) {
                // Every rank is inside this gather: ending the job is the only way out.
                std::fprintf(stderr,
                             "ensemble-cli: an MPI gather of %lld elements exceeds "
                             "2^31 - 1; evaluate on fewer rows or members\n",
                             static_cast<long long>(total));
                abort(exitStatus(ExitCode::Runtime));
            }
            all.resize(static_cast<std::size_t>(total));
        }
        check(MPI_Gatherv(local.data(), count, type, all.data(), counts.data(), displs.data(), type,
                          0, MPI_COMM_WORLD),
              "MPI_Gatherv");
        if (countsOut != nullptr) {
            *countsOut = counts;
        }
        return all;
    }

    int m_rank = 0;
    int m_ranks = 1;
    int m_localRank = 0;
    Mesh m_mesh;
    MPI_Comm m_dataComm = MPI_COMM_NULL;  // this rank's data-axis group (made on first use)
    std::vector<float> m_parts;           // sumDataAxis: every replica's part of my elements
    bool m_leaveWithoutFinalize = false;
};

}  // namespace

std::unique_ptr<Collective> startMpi(int* argc, char*** argv) {
    if (launcherRank() < 0) {
        return nullptr;
    }
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // Errors come back as codes (check() turns them into exceptions) instead of aborting
    // silently inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return std::make_unique<MpiCollective>();
}

void setMpiMesh(Collective& world, Mesh mesh) {
    auto* mpi = dynamic_cast<MpiCollective*>(&world);
    if (mpi == nullptr) {
        throw std::logic_error("setMpiMesh: not an MPI collective");
    }
    mpi->setMesh(mesh);
}

}  // namespace ensemble
