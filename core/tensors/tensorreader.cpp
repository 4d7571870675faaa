#include "tensorreader.h"

#include "hdf5reader.h"
#include "npyreader.h"
#include "safetensorsreader.h"

#include <QFile>
#include <QFileInfo>

namespace fp8scope {

bool finishTensorInfo(TensorInfo &info)
{
    int64_t numel = 1;
    for (int64_t d : info.shape) {
        if (d < 0 || (d > 0 && numel > (int64_t(1) << 62) / d))
            return false;
        numel *= d;
    }
    info.numel = numel;
    if (info.shape.empty()) {
        info.rows = 1;
        info.cols = 1;
    } else {
        info.cols = info.shape.back();
        info.rows = info.cols > 0 ? numel / info.cols : 0;
    }
    return true;
}

namespace {

enum class FileKind { Missing, Folder, Unreadable, Hdf5, Npy, Safetensors, Pickle, Unknown };

FileKind sniff(const QString &path)
{
    const QFileInfo fi(path);
    if (fi.isDir())
        return FileKind::Folder;
    if (!fi.exists())
        return FileKind::Missing;
    QFile f(path);
    if (!fi.isFile() || !f.open(QIODevice::ReadOnly))
        return FileKind::Unreadable;
    const QByteArray head = f.read(16);
    if (path.endsWith(QLatin1String(".pt")) || path.endsWith(QLatin1String(".pth"))
        || path.endsWith(QLatin1String(".bin")) || path.endsWith(QLatin1String(".pkl")) || head.startsWith("PK\x03\x04")
        || (head.size() >= 2 && uchar(head[0]) == 0x80 && uchar(head[1]) <= 5))
        return FileKind::Pickle;
    if (head.startsWith("\x93NUMPY"))
        return FileKind::Npy;
    if (head.startsWith("\x89HDF\r\n\x1a\n") || Hdf5Reader::isHdf5(path))
        return FileKind::Hdf5;
    if (head.size() >= 9 && head[8] == '{')
        return FileKind::Safetensors;
    return FileKind::Unknown;
}

Problem kindProblem(const QString &path, FileKind kind)
{
    if (kind == FileKind::Missing)
        return {path, -1, QStringLiteral("no such file")};
    if (kind == FileKind::Folder)
        return {path, -1, QStringLiteral("is a folder; name a tensor file in it (HDF5, safetensors or .npy)")};
    if (kind == FileKind::Unreadable) {
        // Never open what is not a regular file here: opening a FIFO for reading waits for a writer.
        QString why = QStringLiteral("not a regular file");
        if (QFileInfo(path).isFile()) {
            QFile f(path);
            why = f.open(QIODevice::ReadOnly) ? QStringLiteral("it went away while being opened") : f.errorString();
        }
        return {path, -1, QStringLiteral("cannot be read (%1)").arg(why)};
    }
    if (kind == FileKind::Pickle)
        return {path, -1,
            QStringLiteral("PyTorch pickle files are never loaded (unpickling can run code); convert it with "
                           "fp8scope's tools/pt2safetensors.py (Python with torch and safetensors; it loads "
                           "tensors only) and open %1.safetensors")
                .arg(QFileInfo(path).completeBaseName())};
    return {path, 0, QStringLiteral("not a tensor dump (HDF5, safetensors or .npy expected)")};
}

// Splits FILE[:NAME]; a path containing ':' is taken whole when it exists. FILE may name a folder or
// another non-file, so that the error says what it is.
void splitSpec(const QString &spec, QString *file, QString *name)
{
    *file = spec;
    name->clear();
    if (QFileInfo::exists(spec))
        return;
    for (qsizetype i = spec.lastIndexOf(QLatin1Char(':')); i > 0; i = spec.lastIndexOf(QLatin1Char(':'), i - 1)) {
        if (QFileInfo::exists(spec.left(i))) {
            *file = spec.left(i);
            *name = spec.mid(i + 1);
            return;
        }
    }
}

} // namespace

std::unique_ptr<TensorReader> openTensor(const QString &spec, Problem *problem)
{
    QString file;
    QString name;
    splitSpec(spec, &file, &name);
    const FileKind kind = sniff(file);
    switch (kind) {
    case FileKind::Hdf5: return Hdf5Reader::open(file, name, problem);
    case FileKind::Safetensors: return SafetensorsReader::open(file, name, problem);
    case FileKind::Npy:
        if (!name.isEmpty()) {
            *problem = {file, -1, QStringLiteral(".npy files hold one unnamed tensor; drop ':%1'").arg(name)};
            return nullptr;
        }
        return NpyReader::open(file, problem);
    default: *problem = kindProblem(file, kind); return nullptr;
    }
}

QStringList listTensors(const QString &file, Problem *problem)
{
    const FileKind kind = sniff(file);
    switch (kind) {
    case FileKind::Hdf5: return Hdf5Reader::datasets(file, problem);
    case FileKind::Safetensors: return SafetensorsReader::names(file, problem);
    case FileKind::Npy: return {QString()};
    default: *problem = kindProblem(file, kind); return {};
    }
}

} // namespace fp8scope
