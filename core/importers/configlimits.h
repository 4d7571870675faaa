// The bounds every config reader keeps (YAML, JSON, Megatron arguments): a config file's size, how deep its
// values nest and how many keys one file may write. A YAML "billion laughs" (aliases of aliases, under 500
// bytes) expands without end when flattened; these stop it with a problem instead.
#pragma once

#include <QtGlobal>

namespace fp8scope {

constexpr qint64 kMaxConfigBytes = qint64(64) << 20;
constexpr int kMaxConfigKeys = 50000;
constexpr int kMaxConfigDepth = 64;

// What one file may still write while it is flattened.
struct ConfigBudget {
    int keysLeft = kMaxConfigKeys;
    bool tooManyKeys = false;
    bool tooDeep = false;
    // Takes one key; false (and remembered) when the budget is spent.
    bool take()
    {
        if (keysLeft <= 0) {
            tooManyKeys = true;
            return false;
        }
        --keysLeft;
        return true;
    }
};

} // namespace fp8scope
