// The Active learning section of the Experiment panel: the `active.*` keys (the loop of the
// Active learning view and of `ensemble-cli active`), each row read from the schema. They apply
// to classification runs only (the schema's condition), and an edit needs no new run: they
// configure the view's next loop, not the training of this run (RunSession).

#include <QFormLayout>
#include <QSpinBox>

#include "panels/experiment_panel.h"
#include "panels/form_binding.h"

namespace ensemble::ui {

void ExperimentPanel::buildActiveSection(QFormLayout* active) {
    m_form->addChoice(active, "active.acquisition", tr("Acquisition"));
    m_form->addSpin(active, "active.initial", tr("Initial labels"));
    m_form->addSpin(active, "active.per_round", tr("Labels per round"));
    m_form->addSpin(active, "active.steps", tr("Steps per round"), 50);
    QSpinBox* epochs = m_form->addSpin(active, "active.epochs", tr("Epochs per round"));
    epochs->setSpecialValueText(tr("off (steps)"));
    m_form->addChoice(active, "active.retrain", tr("Retrain"));
    m_form->addSpin(active, "active.rounds", tr("Rounds (CLI)"));
    QSpinBox* subset = m_form->addSpin(active, "active.pool_subset", tr("Pool subset"), 100);
    subset->setSpecialValueText(tr("whole pool"));
    m_form->addCheck(active, "active.l2_per_label", tr("L2 / labels"));
}

}  // namespace ensemble::ui
