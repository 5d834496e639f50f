"""Research projects on top of the library (Model Garden's convention); the library never imports them."""
