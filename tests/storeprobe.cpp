// Must not compile: a view's target (or, without the GUI, core/session's) is not given the store's headers.
// CTest `storeprivate` builds this and passes only on the store headers' own error (tests/CMakeLists.txt).
#include "core/store/runstore.h"

int storeProbe()
{
    return 0;
}
