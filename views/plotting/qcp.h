// The one way views include QCustomPlot: its header uses the `signals`/`slots`/`emit`/`foreach` keywords that this
// project compiles without (QT_NO_KEYWORDS), so they are mapped to the Q_ macros around the include.
#pragma once

#ifndef signals
#define signals Q_SIGNALS
#define FP8SCOPE_UNDEF_SIGNALS
#endif
#ifndef slots
#define slots Q_SLOTS
#define FP8SCOPE_UNDEF_SLOTS
#endif
#ifndef emit
#define emit Q_EMIT
#define FP8SCOPE_UNDEF_EMIT
#endif
#ifndef foreach
#define foreach Q_FOREACH
#define FP8SCOPE_UNDEF_FOREACH
#endif

#include <qcustomplot.h>

#ifdef FP8SCOPE_UNDEF_SIGNALS
#undef signals
#undef FP8SCOPE_UNDEF_SIGNALS
#endif
#ifdef FP8SCOPE_UNDEF_SLOTS
#undef slots
#undef FP8SCOPE_UNDEF_SLOTS
#endif
#ifdef FP8SCOPE_UNDEF_EMIT
#undef emit
#undef FP8SCOPE_UNDEF_EMIT
#endif
#ifdef FP8SCOPE_UNDEF_FOREACH
#undef foreach
#undef FP8SCOPE_UNDEF_FOREACH
#endif
