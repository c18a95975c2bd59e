"""One module per rule. Each module defines one `Rule` subclass decorated with `@register`."""
