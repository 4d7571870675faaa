// The translation unit that compiles a shared precompiled header of the tests (tests/CMakeLists.txt).
