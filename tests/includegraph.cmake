# The real include graph against the link graph: every header of core/<module>/ that an object file of the
# product was compiled with (ninja's deps log: what the compiler read, through every transitive include) must
# belong to a module its target links, directly or through a chain of PUBLIC links. A header that reaches a
# view through another module's header (catalog.h once included runstore.h) fails here with the object, the
# header and the target; tests/layering.cmake checks the direct includes against docs/ARCHITECTURE.md.
# Run by CTest after the build: cmake -DSOURCE_DIR=<repo> -DBUILD_DIR=<build> -DGRAPH=<links.cmake>
#   -DNINJA=<ninja> -P tests/includegraph.cmake
# GRAPH (written by tests/CMakeLists.txt at configure time) sets links_<target> (all direct links) and
# public_<target> (PUBLIC ones) for each target checked, and `targets`.
cmake_minimum_required(VERSION 3.25)
include(${GRAPH})

# The modules a target's sources may see: its own, what it links, and what those hand on PUBLIC.
foreach(target ${targets})
    set(reach ${links_${target}})
    set(queue ${links_${target}})
    while(queue)
        list(POP_FRONT queue next)
        foreach(p ${public_${next}})
            if(NOT p IN_LIST reach)
                list(APPEND reach ${p})
                list(APPEND queue ${p})
            endif()
        endforeach()
    endwhile()
    set(reach_${target} ${target} ${reach})
endforeach()

execute_process(COMMAND ${NINJA} -C ${BUILD_DIR} -t deps OUTPUT_VARIABLE deps RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "includegraph: ninja -t deps failed: ${err}")
endif()
string(REPLACE ";" "\\;" deps "${deps}")
string(REPLACE "\n" ";" lines "${deps}")
set(failures "")
set(checked 0)
set(current "")
foreach(line IN LISTS lines)
    if(line MATCHES "^([^ ].*)\\.o: #deps.*\\(VALID\\)$")
        set(object ${CMAKE_MATCH_1})
        set(current "")
        if(object MATCHES "CMakeFiles/([A-Za-z0-9_-]+)\\.dir/" AND CMAKE_MATCH_1 IN_LIST targets)
            set(current ${CMAKE_MATCH_1})
            math(EXPR checked "${checked} + 1")
        endif()
    elseif(line MATCHES "^[^ ]")
        set(current "") # a stale entry: an object no longer built as it was
    elseif(current AND line MATCHES "^    ${SOURCE_DIR}/core/([a-z]+)/.*\\.h$")
        set(module fp8scope_${CMAKE_MATCH_1})
        if(NOT module IN_LIST reach_${current})
            string(STRIP "${line}" header)
            file(RELATIVE_PATH header ${SOURCE_DIR} ${header})
            list(APPEND failures "${object}.o (${current}) reads ${header}: ${current} does not link ${module}")
        endif()
    endif()
endforeach()
if(checked EQUAL 0)
    message(FATAL_ERROR "includegraph: ninja's deps log of ${BUILD_DIR} holds no object of the checked targets "
        "(build first)")
endif()
if(failures)
    list(REMOVE_DUPLICATES failures)
    list(JOIN failures "\n" text)
    message(FATAL_ERROR "includegraph:\n${text}")
endif()
message(STATUS "includegraph: the headers of ${checked} object files all belong to modules their targets link")
