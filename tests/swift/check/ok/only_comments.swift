// nothing here
/* at all */
