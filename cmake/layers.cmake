# The layers of src/ (docs/architecture.md): each folder may include only the folders it
# depends on, directly or through them, and the public headers of its level. Every source
# file of a folder is compiled against a view of src/ that holds just those folders
# (symbolic links under the build tree), so an include that climbs a layer does not build:
# "exec/..." from src/model/ is "No such file or directory".
#
# Direct dependencies, lowest first. A new folder, or a new dependency, is declared here.
set(TESSERA_LAYER_common "")
set(TESSERA_LAYER_tensor common)
set(TESSERA_LAYER_kv common)
set(TESSERA_LAYER_loader common tensor)
set(TESSERA_LAYER_config common kv loader)
set(TESSERA_LAYER_tokenizer common loader)
set(TESSERA_LAYER_chat common loader tokenizer)
set(TESSERA_LAYER_core common)
set(TESSERA_LAYER_sample common)
set(TESSERA_LAYER_structured common core loader tokenizer)
set(TESSERA_LAYER_sched common config core kv)
set(TESSERA_LAYER_backend common config sample tensor)
set(TESSERA_LAYER_model backend common config kv loader tensor)
set(TESSERA_LAYER_exec backend common config core kv model sample sched tensor)
set(TESSERA_LAYER_engine chat common config core exec kv model sample sched structured tokenizer)
set(TESSERA_LAYER_server chat common engine tokenizer)
set(TESSERA_LAYERS common tensor kv loader config tokenizer chat core sample structured sched backend model exec engine
    server)
# include/tessera/: the plain-data headers for every layer, the engine's API from engine up.
set(TESSERA_PUBLIC_DATA_HEADERS sampling_params.h outputs.h tuning.h engine_args.h)
set(TESSERA_PUBLIC_ENGINE_LAYERS engine server)

set(TESSERA_LAYER_VIEWS ${CMAKE_BINARY_DIR}/layer-views)
foreach(layer IN LISTS TESSERA_LAYERS)
  # The folder and everything it reaches.
  set(reach ${layer})
  set(queue ${TESSERA_LAYER_${layer}})
  while(queue)
    list(POP_FRONT queue dep)
    if(NOT dep IN_LIST reach)
      if(NOT dep IN_LIST TESSERA_LAYERS)
        message(FATAL_ERROR "cmake/layers.cmake: ${layer} depends on an undeclared layer '${dep}'")
      endif()
      list(APPEND reach ${dep})
      list(APPEND queue ${TESSERA_LAYER_${dep}})
    endif()
  endwhile()
  set(view ${TESSERA_LAYER_VIEWS}/${layer})
  file(REMOVE_RECURSE ${view})
  file(MAKE_DIRECTORY ${view}/tessera)
  foreach(dep IN LISTS reach)
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${dep} ${view}/${dep} SYMBOLIC)
  endforeach()
  set(public ${TESSERA_PUBLIC_DATA_HEADERS})
  if(layer IN_LIST TESSERA_PUBLIC_ENGINE_LAYERS)
    list(APPEND public llm.h)
  endif()
  foreach(header IN LISTS public)
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/include/tessera/${header} ${view}/tessera/${header} SYMBOLIC)
  endforeach()
  file(GLOB_RECURSE layer_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${layer}/*.cc
       ${CMAKE_SOURCE_DIR}/src/${layer}/*.cu)
  set_source_files_properties(${layer_sources} PROPERTIES INCLUDE_DIRECTORIES ${view})
endforeach()
