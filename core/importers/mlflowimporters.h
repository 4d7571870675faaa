// MLflow's tracking stores (docs/research/wandb-mlflow-formats.md has the layouts, read in MLflow's sources):
// - the SQLite store (mlflow.db, what MLflow now makes by default): every run not deleted is a run of its own
//   (IngestSink::useRun), named by its name (the mlflow.runName tag where the name is empty; the first eight
//   characters of its id where two runs of the file share a name); its experiment is its group; metrics by
//   step (a step logged twice keeps its last value; NaN and the +-DBL_MAX MLflow stores for the infinities
//   read back as such), params as its config, its tags as config "tag.<key>" (MLflow's own mlflow.* tags left
//   out, but for its note, the run's notes).
// - the file store (mlruns/<experiment>/<run>/): a run folder is found by its meta.yaml, and read whole from it
//   (meta.yaml, metrics/<key> lines "<ms> <value> <step>", params/<key>, tags/<key>, nested keys as folders);
//   the folder scanner makes the folder a run of its own, named by the run's name (mlflowRunName); the
//   experiment's meta.yaml gives the group's name and is not read as a config.
#pragma once

#include "importer.h"

namespace fp8scope {

class MlflowDbImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("mlflow-db"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

class MlflowRunImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("mlflow-run"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
    // The run is its folder: changed when any file it is read from is (its experiment's meta.yaml too).
    void stamp(const QString &path, int64_t *size, int64_t *mtime) const override;
};

// An experiment's meta.yaml (mlruns/<experiment>/meta.yaml): read with its runs, never as a config of its own.
class MlflowExperimentImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("mlflow-experiment"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

// A file-store run's name and id (its first eight characters, as a run of the SQLite store is named where two
// share a name) from its meta.yaml (the mlflow.runName tag where meta.yaml has no name).
LoggedRunName mlflowRunName(const QString &metaPath);

} // namespace fp8scope
