// Names a person can tell apart in little room: a list of runs named after their cluster jobs
// ("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp2_pp2_fp8_tp_pp_sp") shares most of every name, and eliding each name
// in its middle leaves the shared ends and cuts out what differs. Here the words every name shares at its start
// and at its end go, and what is left is shortened only where that keeps the names apart.
#pragma once

#include <QStringList>

namespace fp8scope {

// One short name a name, in order. Names are cut into words at '_', '-', '.', '/' and spaces; the words all
// the names share at their start and at their end are dropped (never a whole name: a name that is all shared
// keeps its last word). A name still longer than maxChars (0: no limit) keeps its start and end around an
// ellipsis, as long as that leaves it apart from every other; otherwise it stays whole. Equal names stay equal,
// and a single name is returned whole (there is nothing to tell it apart from).
QStringList distinctShortNames(const QStringList &names, int maxChars = 0);

} // namespace fp8scope
