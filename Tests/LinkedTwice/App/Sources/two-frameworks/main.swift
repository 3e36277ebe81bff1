import FrameworkA
import FrameworkB

// Run with HABITAT_CONTEXT=test: the second copy's first read warns on standard error.
print(readA(), readB())
