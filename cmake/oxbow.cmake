# oxbow_module(NAME SOURCES ... DEPS ...): one module = one folder = one namespace = one library.
function(oxbow_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(oxbow_${name} STATIC ${ARG_SOURCES})
  target_include_directories(oxbow_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_BINARY_DIR}/src)
  target_link_libraries(oxbow_${name} PUBLIC ${ARG_DEPS})
endfunction()

# oxbow_test(NAME SOURCES ... DEPS ...): one GoogleTest binary per module, registered with ctest.
function(oxbow_test name)
  if(NOT OXBOW_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  include(GoogleTest)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()

# oxbow_fuzzer(NAME SOURCES ... DEPS ...): a libFuzzer target in build/<preset>/fuzz/, built only
# with OXBOW_FUZZ. NAME must end in _fuzzer; seeds live in fuzz/seeds/NAME/.
function(oxbow_fuzzer name)
  if(NOT OXBOW_FUZZ)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
endfunction()
