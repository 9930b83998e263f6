#include <gtest/gtest.h>

#include "tracegen.hpp"

TEST(Tracegen, ScenariosExist) { EXPECT_FALSE(stepscope::tracegen::scenarios().empty()); }
