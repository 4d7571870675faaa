# Writes OUT: the digest of the sources the triage's answers come from (FILES, relative to SOURCE_DIR), with the
# list, so that a stored answer computed by other rules is computed again without a revision moved by hand
# (core/analysis/storedtriage.cpp, docs/TRIAGE.md "Stored results"). The digest: SHA-256 over "path\n" then
# the file's SHA-256 hex and "\n", for each file in the order given; its first 16 hex digits are kept.
set(text "")
foreach(f ${FILES})
    file(SHA256 "${SOURCE_DIR}/${f}" h)
    string(APPEND text "${f}\n${h}\n")
endforeach()
string(SHA256 digest "${text}")
string(SUBSTRING "${digest}" 0 16 digest)
string(REPLACE ";" "," list "${FILES}")
set(header "// Written by core/analysis/rulesdigest.cmake at build time.\n#pragma once\n#define FP8SCOPE_RULES_DIGEST \"${digest}\"\n#define FP8SCOPE_RULES_FILES \"${list}\"\n")
set(old "")
if(EXISTS "${OUT}")
    file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL header)
    file(WRITE "${OUT}" "${header}")
endif()
