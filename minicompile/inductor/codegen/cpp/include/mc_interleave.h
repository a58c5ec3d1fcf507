// MC_SCHEDULED, the attribute of kernels whose loops run several vectors at a
// time (codegen/cpp/interleave.py); included by a translation unit that has one.
#pragma once

// Such kernels run GCC's instruction scheduler before register allocation, so that the chains
// of independent vectors overlap.
#if defined(__GNUC__) && !defined(__clang__)
#define MC_SCHEDULED __attribute__((optimize("schedule-insns", "sched-pressure")))
#else
#define MC_SCHEDULED
#endif
