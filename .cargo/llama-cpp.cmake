# Included by CMake after every `project()` of llama.cpp's build: `.cargo/config.toml`
# sets CMAKE_PROJECT_INCLUDE to this file, and llama-cpp-sys-2's build script hands every
# CMAKE_* variable of its environment on to CMake.
#
# In builds of cargo's dev profile (the tests, `cargo build`), llama.cpp's `common`
# library (argument parsing, chat templates and parsers, downloads, the
# JSON-schema-to-grammar converter, all over nlohmann's json) and the HTTP client it
# links (cpp-httplib) are built without optimisation. At -O3 they are two fifths of
# the C++ compile time, and they hold no code a decoded token runs through: of them
# the local model calls only `json_schema_to_grammar`, once per request with tools.
# The decode path (ggml, ggml-cpu, llama and its grammar sampler) keeps CMake's
# `Release` flags, and release builds (cargo sets PROFILE=release for the release and
# bench profiles) are built as before. docs/performance.md ("CI time") has the
# measurements.

if(CMAKE_SOURCE_DIR STREQUAL PROJECT_SOURCE_DIR
   AND "$ENV{PROFILE}" STREQUAL "debug"
   AND NOT OXYDRA_LLAMA_CPP_INCLUDED
   AND CMAKE_VERSION VERSION_GREATER_EQUAL 3.19
   AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set(OXYDRA_LLAMA_CPP_INCLUDED TRUE)

  function(oxydra_unoptimised_llama_cpp_targets)
    foreach(target IN ITEMS llama-common cpp-httplib)
      if(TARGET ${target})
        # After the configuration's -O3 on the command line, so it wins.
        target_compile_options(${target} PRIVATE -O0)
      endif()
    endforeach()
  endfunction()

  # Deferred to the end of the top-level CMakeLists.txt, when the targets exist.
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}"
    CALL oxydra_unoptimised_llama_cpp_targets)
endif()
