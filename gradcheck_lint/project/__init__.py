"""Reading the whole project: imports of the project's own modules resolved, calls into them followed."""

from .context import Evidence, ProjectView
from .index import ProjectIndex, find_root, index_for

__all__ = ["Evidence", "ProjectIndex", "ProjectView", "find_root", "index_for"]
