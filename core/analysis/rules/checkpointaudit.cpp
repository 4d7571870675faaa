#include "core/analysis/rules.h"

#include <QFileInfo>

namespace fp8scope::analysis::rules {

namespace {

// What to re-export, per kind of audit finding: the action that fixes it in the checkpoint.
QString reexport(const AuditFinding &a)
{
    const QString layer = a.layer;
    switch (a.kind) {
    case AuditKind::MissingScale:
        return QStringLiteral("re-export %1 with its scales: the decode scale (scale_inv) beside the FP8 weight, and "
                              "the calibrated input_scale where activations are quantized statically")
            .arg(layer);
    case AuditKind::InvalidScale:
        return QStringLiteral("re-export %1's scales: finite, positive, in the layout the quantization config states")
            .arg(layer);
    case AuditKind::InvertedScale:
        return QStringLiteral("re-export %1's weight scale as the decode scale, scale_inv = 1 / scale (Transformer "
                              "Engine's scale multiplies before the cast)")
            .arg(layer);
    case AuditKind::WeightMismatch:
        return QStringLiteral("re-export %1 from the checkpoint that was evaluated: its weights are not those of the "
                              "reference")
            .arg(layer);
    case AuditKind::CalibrationMismatch:
        return QStringLiteral("calibrate %1's static input_scale again, on activations of this checkpoint").arg(layer);
    case AuditKind::PrecisionMismatch:
        return QStringLiteral("re-export %1 in BF16, as the quantization config (and the training) keeps it")
            .arg(layer);
    }
    return {};
}

} // namespace

// The inference checkpoint the run folder holds, audited (core/audit): each of its findings is one here, on the
// layer in the training naming where it maps, critical where the audit says so; the downstream gap's next steps
// start with what they say to re-export (nextsteps.cpp).
void checkpointAudit(const PairInputs &in, const TriageOptions &, Comparison &c)
{
    if (!in.audit)
        return;
    for (const AuditFinding &a : in.audit->findings) {
        Finding f;
        f.kind = FindingKind::CheckpointAudit;
        f.severity = a.severity == AuditSeverity::Critical ? Severity::Critical : Severity::Warning;
        f.layer = a.trainingLayer.isEmpty() ? a.layer : a.trainingLayer;
        const QString kind = auditKindName(a.kind);
        f.key = kind;
        f.summary
            = QStringLiteral("%1 in the inference checkpoint: %2%3: %4")
                  .arg(kind, a.layer,
                      a.trainingLayer.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(a.trainingLayer), a.evidence);
        f.evidence = {{QStringLiteral("audit"), kind}, {QStringLiteral("inference_layer"), a.layer},
            {QStringLiteral("checkpoint"), in.audit->checkpoint}, {QStringLiteral("detail"), a.evidence}};
        f.suggestion = reexport(a);
        c.findings.push_back(f);
    }
}

} // namespace fp8scope::analysis::rules
