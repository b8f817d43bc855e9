#pragma once
#include <canberra.h>
