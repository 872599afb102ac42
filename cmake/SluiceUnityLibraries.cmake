# The libraries compile as unity builds too (8 sources per unit), as the test programs do
# (SluiceTesting.cmake): nlohmann/json's and the standard library's templates are instantiated
# and code-generated once per unit instead of once per file. File-local names must therefore be
# unique within a library; shared helpers live in headers (common/ascii.h, ...).
option(SLUICE_UNITY_LIBS "Compile the libraries as unity builds, 8 sources per unit" ON)

# sluice_apply_unity_libraries(): call once, after every target is defined.
function(sluice_apply_unity_libraries)
  if(NOT SLUICE_UNITY_LIBS)
    return()
  endif()
  _sluice_targets(libraries "^STATIC_LIBRARY$" NO_TESTS)
  list(REMOVE_ITEM libraries sluice_kernels)
  foreach(target IN LISTS libraries)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    # A source included into a unity file is not the "main file", so GCC would warn about every
    # class whose member's type is file-local (-Wsubobject-linkage): true of each file alone.
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-Wno-subobject-linkage>)
  endforeach()
endfunction()
