#include "hdf5dumpwriter.h"

#include <QFile>

#include <algorithm>

namespace fp8scope {

namespace {

void writeStringAttribute(hid_t object, const char *name, const QString &value)
{
    const QByteArray utf8 = value.toUtf8();
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, size_t(std::max<qsizetype>(1, utf8.size())));
    H5Tset_cset(type, H5T_CSET_UTF8);
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t attr = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, type, utf8.isEmpty() ? "" : utf8.constData());
    H5Aclose(attr);
    H5Sclose(space);
    H5Tclose(type);
}

} // namespace

Hdf5DumpWriter::~Hdf5DumpWriter()
{
    if (m_file >= 0)
        H5Fclose(m_file);
}

std::unique_ptr<Hdf5DumpWriter> Hdf5DumpWriter::create(const QString &path, Problem *problem)
{
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    auto w = std::unique_ptr<Hdf5DumpWriter>(new Hdf5DumpWriter);
    w->m_path = path;
    w->m_file = H5Fcreate(QFile::encodeName(path).constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (w->m_file < 0) {
        *problem = {path, -1, QStringLiteral("cannot create HDF5 file")};
        return nullptr;
    }
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t attr = H5Acreate2(w->m_file, "fp8scope_dump_version", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
    const int version = 1;
    H5Awrite(attr, H5T_NATIVE_INT, &version);
    H5Aclose(attr);
    H5Sclose(space);
    return w;
}

void Hdf5DumpWriter::setRootAttribute(const char *name, const QString &value)
{
    writeStringAttribute(m_file, name, value);
}

bool Hdf5DumpWriter::writeTensor(const QString &datasetPath, DType dtype, const std::vector<int64_t> &shape,
    const void *data, const DumpTensorAttributes &attributes, Problem *problem)
{
    const int rank = int(shape.size());
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    std::vector<hsize_t> chunk(dims);
    // About 1 MiB chunks: whole rows, as many as fit.
    hsize_t rowElems = 1;
    for (int i = 1; i < rank; ++i)
        rowElems *= dims[size_t(i)];
    if (rank > 0) {
        const hsize_t target = hsize_t(1 << 20) / hsize_t(dtypeSize(dtype));
        chunk[0] = std::max<hsize_t>(1, std::min<hsize_t>(dims[0], target / std::max<hsize_t>(rowElems, 1)));
    }
    hid_t fileType = H5T_IEEE_F32LE;
    hid_t memType = H5T_NATIVE_FLOAT;
    switch (dtype) {
    case DType::F32: break;
    case DType::F64:
        fileType = H5T_IEEE_F64LE;
        memType = H5T_NATIVE_DOUBLE;
        break;
    case DType::F16: break; // the binary16 type is built below
    case DType::BF16:
        fileType = H5T_STD_U16LE;
        memType = H5T_NATIVE_UINT16;
        break;
    case DType::F8E4M3:
    case DType::F8E5M2:
        fileType = H5T_STD_U8LE;
        memType = H5T_NATIVE_UINT8;
        break;
    case DType::F4E2M1: *problem = {m_path, -1, QStringLiteral("FP4 tensors are not written to dumps")}; return false;
    }
    hid_t halfType = -1;
    if (dtype == DType::F16) {
        // IEEE binary16 built from a float type: 1 sign, 5 exponent, 10 mantissa bits.
        halfType = H5Tcopy(H5T_IEEE_F32LE);
        H5Tset_fields(halfType, 15, 10, 5, 0, 10);
        H5Tset_size(halfType, 2);
        H5Tset_ebias(halfType, 15);
        fileType = memType = halfType;
    }
    const hid_t space = H5Screate_simple(rank, dims.data(), nullptr);
    const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    bool anyEmpty = false;
    for (hsize_t d : dims)
        anyEmpty = anyEmpty || d == 0;
    if (rank > 0 && !anyEmpty) {
        H5Pset_chunk(dcpl, rank, chunk.data());
        H5Pset_deflate(dcpl, 4);
    }
    const hid_t ds = H5Dcreate2(m_file, datasetPath.toUtf8().constData(), fileType, space, lcpl, dcpl, H5P_DEFAULT);
    bool ok = ds >= 0 && (anyEmpty || H5Dwrite(ds, memType, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    if (ok) {
        if (dtype == DType::BF16)
            writeStringAttribute(ds, "dtype", QStringLiteral("bfloat16"));
        if (!attributes.recipe.isEmpty())
            writeStringAttribute(ds, "recipe", attributes.recipe);
        if (!attributes.fp8Format.isEmpty())
            writeStringAttribute(ds, "fp8_format", attributes.fp8Format);
        const std::pair<const char *, const std::vector<float> *> arrays[]
            = {{"amax_history", &attributes.amaxHistory}, {"scale_inv", &attributes.scaleInv}};
        for (const auto &[name, values] : arrays) {
            if (values->empty())
                continue;
            const hsize_t n = values->size();
            const hid_t aspace = H5Screate_simple(1, &n, nullptr);
            const hid_t attr = H5Acreate2(ds, name, H5T_IEEE_F32LE, aspace, H5P_DEFAULT, H5P_DEFAULT);
            H5Awrite(attr, H5T_NATIVE_FLOAT, values->data());
            H5Aclose(attr);
            H5Sclose(aspace);
        }
    }
    if (ds >= 0)
        H5Dclose(ds);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
    H5Sclose(space);
    if (halfType >= 0)
        H5Tclose(halfType);
    if (!ok)
        *problem = {m_path, -1, QStringLiteral("cannot write dataset '%1'").arg(datasetPath)};
    return ok;
}

} // namespace fp8scope
