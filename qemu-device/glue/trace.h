#include "trace/trace-hw_misc_aic100.h"
