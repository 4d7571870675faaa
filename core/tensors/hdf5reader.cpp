#include "hdf5reader.h"

#include "dumplayout.h"

#include <QFileInfo>

namespace fp8scope {

namespace {

// HDF5 prints its error stack to stderr by default; errors here become Problems instead.
void silenceHdf5()
{
    static const bool once = [] {
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        return true;
    }();
    (void)once;
}

QString readStringAttribute(hid_t object, const char *name)
{
    if (H5Aexists(object, name) <= 0)
        return {};
    const hid_t attr = H5Aopen(object, name, H5P_DEFAULT);
    if (attr < 0)
        return {};
    QString out;
    const hid_t type = H5Aget_type(attr);
    if (type >= 0 && H5Tget_class(type) == H5T_STRING) {
        const hid_t space = H5Aget_space(attr);
        if (H5Sget_simple_extent_npoints(space) == 1) {
            if (H5Tis_variable_str(type) > 0) {
                char *value = nullptr;
                const hid_t mem = H5Tcopy(H5T_C_S1);
                H5Tset_size(mem, H5T_VARIABLE);
                H5Tset_cset(mem, H5Tget_cset(type));
                if (H5Aread(attr, mem, &value) >= 0 && value) {
                    out = QString::fromUtf8(value);
                    H5free_memory(value);
                }
                H5Tclose(mem);
            } else {
                const size_t size = H5Tget_size(type);
                if (size > 0 && size < 4096) {
                    QByteArray buf(qsizetype(size), '\0');
                    const hid_t mem = H5Tcopy(H5T_C_S1);
                    H5Tset_size(mem, size);
                    H5Tset_cset(mem, H5Tget_cset(type));
                    if (H5Aread(attr, mem, buf.data()) >= 0)
                        out = QString::fromUtf8(buf.constData(), qstrnlen(buf.constData(), size));
                    H5Tclose(mem);
                }
            }
        }
        H5Sclose(space);
    }
    if (type >= 0)
        H5Tclose(type);
    H5Aclose(attr);
    return out;
}

herr_t collectDataset(hid_t group, const char *name, const H5L_info_t *, void *data)
{
    const hid_t ds = H5Dopen2(group, name, H5P_DEFAULT);
    if (ds >= 0) {
        static_cast<QStringList *>(data)->append(QLatin1Char('/') + QString::fromUtf8(name));
        H5Dclose(ds);
    }
    return 0;
}

} // namespace

bool Hdf5Reader::isHdf5(const QString &path)
{
    silenceHdf5();
    return H5Fis_hdf5(QFile::encodeName(path).constData()) > 0;
}

Hdf5Reader::~Hdf5Reader()
{
    if (m_memType >= 0)
        H5Tclose(m_memType);
    if (m_dataset >= 0)
        H5Dclose(m_dataset);
    if (m_file >= 0)
        H5Fclose(m_file);
}

QStringList Hdf5Reader::datasets(const QString &path, Problem *problem)
{
    silenceHdf5();
    const hid_t file = H5Fopen(QFile::encodeName(path).constData(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        *problem = {path, -1, QStringLiteral("cannot open as HDF5")};
        return {};
    }
    QStringList out;
    if (H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, collectDataset, &out) < 0)
        *problem = {path, -1, QStringLiteral("cannot walk the HDF5 groups")};
    H5Fclose(file);
    return out;
}

std::unique_ptr<Hdf5Reader> Hdf5Reader::open(const QString &path, const QString &dataset, Problem *problem)
{
    silenceHdf5();
    auto r = std::unique_ptr<Hdf5Reader>(new Hdf5Reader);
    r->m_file = H5Fopen(QFile::encodeName(path).constData(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (r->m_file < 0) {
        *problem = {path, -1, QStringLiteral("cannot open as HDF5")};
        return nullptr;
    }
    QString name = dataset;
    if (name.isEmpty()) {
        const QStringList all = datasets(path, problem);
        if (all.size() != 1) {
            *problem = {path, -1,
                QStringLiteral("the file holds %1 datasets; name one as FILE:/path/to/dataset").arg(all.size())};
            return nullptr;
        }
        name = all.front();
    }
    r->m_dataset = H5Dopen2(r->m_file, name.toUtf8().constData(), H5P_DEFAULT);
    if (r->m_dataset < 0) {
        *problem = {path, -1, QStringLiteral("no dataset '%1'").arg(name)};
        return nullptr;
    }
    const hid_t type = H5Dget_type(r->m_dataset);
    const H5T_class_t cls = H5Tget_class(type);
    const int bytes = int(H5Tget_size(type));
    const bool isUnsigned = cls == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_NONE;
    const bool littleEndian = H5Tget_order(type) == H5T_ORDER_LE || bytes == 1;
    QString error;
    const auto dtype = dumpElementType(cls == H5T_FLOAT ? StoredClass::Float
            : isUnsigned                                ? StoredClass::UnsignedInteger
                                                        : StoredClass::Other,
        bytes, readStringAttribute(r->m_dataset, "dtype"), readStringAttribute(r->m_dataset, "fp8_format"), &error);
    if (dtype && *dtype == DType::F16 && !littleEndian)
        error = QStringLiteral("big-endian float16 is not supported");
    if (!dtype || !error.isEmpty()) {
        H5Tclose(type);
        *problem = {path, -1, QStringLiteral("dataset '%1': %2").arg(name, error)};
        return nullptr;
    }
    switch (*dtype) {
    case DType::F32: r->m_memType = H5Tcopy(H5T_NATIVE_FLOAT); break;
    case DType::F16: r->m_memType = H5Tcopy(type); break;
    case DType::BF16: r->m_memType = H5Tcopy(H5T_NATIVE_UINT16); break;
    case DType::F8E4M3:
    case DType::F8E5M2: r->m_memType = H5Tcopy(H5T_NATIVE_UINT8); break;
    }
    H5Tclose(type);

    const hid_t space = H5Dget_space(r->m_dataset);
    const int rank = H5Sget_simple_extent_ndims(space);
    if (rank < 0 || rank > 8) {
        H5Sclose(space);
        *problem = {path, -1, QStringLiteral("dataset '%1': unsupported rank %2").arg(name).arg(rank)};
        return nullptr;
    }
    hsize_t dims[8] = {};
    H5Sget_simple_extent_dims(space, dims, nullptr);
    H5Sclose(space);
    r->m_info.file = path;
    r->m_info.name = name;
    r->m_info.dtype = *dtype;
    for (int i = 0; i < rank; ++i)
        r->m_info.shape.push_back(int64_t(dims[i]));
    if (!finishTensorInfo(r->m_info)) {
        *problem = {path, -1, QStringLiteral("dataset '%1': shape overflows").arg(name)};
        return nullptr;
    }
    r->m_sliceElements = 1;
    for (int i = 1; i < rank; ++i)
        r->m_sliceElements *= int64_t(dims[i]);

    // A declared chunk larger than the budget would make the library allocate it whole.
    const hid_t dcpl = H5Dget_create_plist(r->m_dataset);
    if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
        hsize_t chunk[8] = {};
        const int crank = H5Pget_chunk(dcpl, 8, chunk);
        int64_t chunkBytes = dtypeSize(*dtype);
        for (int i = 0; i < crank && chunkBytes <= kMaxChunkBytes; ++i)
            chunkBytes *= int64_t(chunk[i]);
        if (crank < 0 || chunkBytes > kMaxChunkBytes) {
            H5Pclose(dcpl);
            *problem = {path, -1,
                QStringLiteral("dataset '%1': chunk of more than %2 MiB").arg(name).arg(kMaxChunkBytes >> 20)};
            return nullptr;
        }
    } else if (H5Pget_layout(dcpl) == H5D_CONTIGUOUS && r->m_info.numel > 0) {
        const haddr_t addr = H5Dget_offset(r->m_dataset);
        const qint64 fileSize = QFileInfo(path).size();
        const qint64 need = r->m_info.numel * dtypeSize(*dtype);
        if (addr == HADDR_UNDEF || qint64(addr) > fileSize || need > fileSize - qint64(addr)) {
            H5Pclose(dcpl);
            *problem = {path, addr == HADDR_UNDEF ? -1 : qint64(addr),
                QStringLiteral("dataset '%1' declares %2 bytes past the end of the file").arg(name).arg(need)};
            return nullptr;
        }
    }
    H5Pclose(dcpl);
    return r;
}

std::vector<float> Hdf5Reader::amaxHistory() const
{
    std::vector<float> out;
    if (H5Aexists(m_dataset, "amax_history") <= 0)
        return out;
    const hid_t attr = H5Aopen(m_dataset, "amax_history", H5P_DEFAULT);
    const hid_t space = H5Aget_space(attr);
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    if (n > 0 && n <= (1 << 20)) {
        out.resize(size_t(n));
        if (H5Aread(attr, H5T_NATIVE_FLOAT, out.data()) < 0)
            out.clear();
    }
    H5Sclose(space);
    H5Aclose(attr);
    return out;
}

bool Hdf5Reader::read(int64_t first, int64_t count, void *dst, Problem *problem)
{
    if (count == 0)
        return true;
    const int rank = int(m_info.shape.size());
    hsize_t start[8] = {};
    hsize_t extent[8] = {};
    if (rank == 0) {
        // scalar dataset
    } else {
        start[0] = hsize_t(first / m_sliceElements);
        extent[0] = hsize_t(count / m_sliceElements);
        for (int i = 1; i < rank; ++i)
            extent[i] = hsize_t(m_info.shape[size_t(i)]);
    }
    const hid_t fileSpace = H5Dget_space(m_dataset);
    herr_t status = 0;
    hid_t memSpace = -1;
    if (rank > 0) {
        status = H5Sselect_hyperslab(fileSpace, H5S_SELECT_SET, start, nullptr, extent, nullptr);
        // The memory space has the selection's shape: against a flat one of the same size HDF5 1.10 maps
        // element runs one by one (measured on 128 MiB of float32: 20x slower chunked, 2.4x with gzip).
        memSpace = H5Screate_simple(rank, extent, nullptr);
    } else {
        memSpace = H5Screate(H5S_SCALAR);
    }
    if (status >= 0)
        status = H5Dread(m_dataset, m_memType, memSpace, fileSpace, H5P_DEFAULT, dst);
    H5Sclose(memSpace);
    H5Sclose(fileSpace);
    if (status < 0) {
        *problem = {m_info.file, -1,
            QStringLiteral("dataset '%1': cannot read elements %2..%3 (corrupt or truncated file)")
                .arg(m_info.name)
                .arg(first)
                .arg(first + count)};
        return false;
    }
    return true;
}

} // namespace fp8scope
