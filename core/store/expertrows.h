// The experts of a mixture-of-experts GEMM reduced step by step, kept in the store beside their points: for each
// (run, statistic, tensor kind, source, recipe) whose layers include experts (core/formats/expertnames.h), each
// GEMM's worst (largest) expert value at each step, the expert it is from, their mean, and the values that were not
// finite. Made at the end of an ingest that changed the experts' points, so that a heatmap of a row per GEMM reads a
// row per GEMM, not every expert's points (3,120 GEMMs of a 64-expert model are 96 rows). Read back only while the
// experts' points are as they were when it was made (a fingerprint of their chunks); the query layer groups from
// the points otherwise.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <vector>

namespace fp8scope {

struct ExpertGroupRow {
    QString gemm;
    QStringList layers; // its experts' layers, in expert order
    std::vector<int32_t> experts; // ... their indices
    std::vector<int64_t> steps; // the steps any of its experts has, ascending
    std::vector<double> worst; // per step: the largest finite value (NaN: none)
    std::vector<int32_t> which; // ... the expert it is from (-1: none)
    std::vector<double> mean; // ... the mean of the finite values (NaN: none)
    struct NotFinite {
        uint32_t column = 0;
        double value = 0;
        int32_t expert = -1; // the lowest expert that logged one at that step
    };
    std::vector<NotFinite> notFinite;
};

// The rows of one GEMM's experts, from their layers' points (step order each).
ExpertGroupRow reduceExperts(const QString &gemm, std::vector<std::pair<int32_t, QString>> experts,
    const std::vector<const std::vector<std::pair<int64_t, double>> *> &points);

QByteArray encodeExpertRows(const std::vector<ExpertGroupRow> &rows);
// False for bytes encodeExpertRows did not write.
bool decodeExpertRows(const QByteArray &bytes, std::vector<ExpertGroupRow> *rows);

} // namespace fp8scope
