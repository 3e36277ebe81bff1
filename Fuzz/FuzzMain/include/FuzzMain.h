#ifndef FUZZ_MAIN_H
#define FUZZ_MAIN_H
// Nothing to import: this target only supplies the program's entry point.
#endif
