// The preconditions every backend shares (checkTrainingProblem, backend/backend.h): a problem
// that cannot be trained fails with the same error kind, hence the same exit code, on every
// backend. CpuBackend is checked here; CudaBackend::bind calls the same function first.
#include <QtTest/QtTest>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"
#include "core/exit_codes.h"
#include "support/backend_test_problem.h"

using namespace ensemble;
using ensemble::test::makeProblem;

namespace {

// The ConfigError `bind` threw, or nothing when it threw none.
std::optional<ConfigError> configErrorOf(const std::function<void()>& bind) {
    try {
        bind();
    } catch (const ConfigError& e) {
        return e;
    }
    return std::nullopt;
}

}  // namespace

class TestBackend : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void acceptsATrainableProblem();
    void badShardIsAConfigErrorOnTheMesh();
    void badShardFailsBindTheSameWay();
    void problemsNoConfigMakesAreInvalidArguments();
};

void TestBackend::acceptsATrainableProblem() {
    const test::Problem p = makeProblem(BootstrapMode::None, OptimizerKind::Adam, Activation::Relu);
    checkTrainingProblem(p.training);
    TrainingProblem shard = p.training;  // batch 24: 4 replicas of 6 rows
    shard.shard.index = 3;
    shard.shard.count = 4;
    shard.shard.sum = [](float*, std::size_t) {};
    checkTrainingProblem(shard);
    // Prediction alone needs neither data nor rules.
    TrainingProblem predictOnly;
    predictOnly.layout = p.training.layout;
    predictOnly.plan.batch = 1;
    checkTrainingProblem(predictOnly);
}

void TestBackend::badShardIsAConfigErrorOnTheMesh() {
    const test::Problem p = makeProblem(BootstrapMode::None, OptimizerKind::Adam, Activation::Relu);
    const auto sum = [](float*, std::size_t) {};
    struct Case {
        const char* what;
        int index;
        int count;
        bool withSum;
    };
    const Case cases[] = {
        {"batch 24 over 5 replicas", 0, 5, true},
        {"replica index past the count", 4, 4, true},
        {"negative replica index", -1, 2, true},
        {"no sum over the replicas", 1, 2, false},
        {"no replicas", 0, 0, true},
    };
    for (const Case& c : cases) {
        TrainingProblem bad = p.training;
        bad.shard.index = c.index;
        bad.shard.count = c.count;
        if (c.withSum) {
            bad.shard.sum = sum;
        }
        const std::optional<ConfigError> e = configErrorOf([&] { checkTrainingProblem(bad); });
        QVERIFY2(e.has_value(), c.what);
        QCOMPARE(e->kind(), ErrorKind::Config);
        QCOMPARE(e->key(), std::string("backend.mesh"));
        QCOMPARE(exitCodeFor(*e), ExitCode::Usage);
    }
}

void TestBackend::badShardFailsBindTheSameWay() {
    const test::Problem p =
        makeProblem(BootstrapMode::Resample, OptimizerKind::Sgd, Activation::Tanh);
    TrainingProblem bad = p.training;
    bad.shard.index = 0;
    bad.shard.count = 5;  // 24 rows do not split 5 ways
    bad.shard.sum = [](float*, std::size_t) {};
    CpuBackend cpu(1);
    const std::optional<ConfigError> e = configErrorOf([&] { cpu.bind(bad); });
    QVERIFY(e.has_value());
    QCOMPARE(e->kind(), ErrorKind::Config);
    QCOMPARE(e->key(), std::string("backend.mesh"));
    QCOMPARE(exitStatus(exitCodeFor(*e)), 2);
    // The backend still binds a good problem afterwards.
    cpu.bind(p.training);
}

void TestBackend::problemsNoConfigMakesAreInvalidArguments() {
    const test::Problem p = makeProblem(BootstrapMode::None, OptimizerKind::Adam, Activation::Relu);
    TrainingProblem noLabels = p.training;
    noLabels.trainY = nullptr;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, checkTrainingProblem(noLabels));
    TrainingProblem noBatch = p.training;
    noBatch.plan.batch = 0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, checkTrainingProblem(noBatch));
    TrainingProblem otherRows = p.training;
    otherRows.plan.rows += 1;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, checkTrainingProblem(otherRows));
    TrainingProblem oneRuleShort = p.training;
    oneRuleShort.rules.pop_back();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, checkTrainingProblem(oneRuleShort));
    // A runtime failure, not a usage error: exit code 4.
    try {
        checkTrainingProblem(noLabels);
    } catch (const std::exception& e) {
        QCOMPARE(exitCodeFor(e), ExitCode::Runtime);
    }
}

QTEST_APPLESS_MAIN(TestBackend)
#include "tst_backend.moc"
