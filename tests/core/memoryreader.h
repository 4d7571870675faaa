// A TensorReader over bytes in memory, for tests.
#pragma once

#include "core/tensors/tensorreader.h"

#include <cstring>

namespace fp8scope {

class MemoryReader : public TensorReader
{
public:
    MemoryReader(DType dtype, std::vector<int64_t> shape, QByteArray bytes)
        : m_bytes(std::move(bytes))
    {
        m_info.file = QStringLiteral("<memory>");
        m_info.dtype = dtype;
        m_info.shape = std::move(shape);
        finishTensorInfo(m_info);
    }

    bool read(int64_t first, int64_t count, void *dst, Problem *) override
    {
        const int size = dtypeSize(m_info.dtype);
        std::memcpy(dst, m_bytes.constData() + first * size, size_t(count * size));
        return true;
    }

private:
    QByteArray m_bytes;
};

} // namespace fp8scope
