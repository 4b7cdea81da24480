#pragma once
// Tessera's scheduler: a QUARK-style dynamic DAG runtime with task aggregation.
#include "tessera/sched/access.hpp"
#include "tessera/sched/handle.hpp"
#include "tessera/sched/runtime.hpp"
#include "tessera/sched/trace.hpp"
#include "tessera/sched/trace_export.hpp"
