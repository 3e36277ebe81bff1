#include "HabitatShims.h"
