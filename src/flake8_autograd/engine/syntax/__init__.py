"""Source text and syntax trees: parsing one class with libcst (:mod:`.source`), walks (:mod:`.walk`),
module scopes (:mod:`.scopes`), import names (:mod:`.names`), where names are used (:mod:`.name_uses`),
and file positions of nodes for findings and fixes (:mod:`.locate`). Knows nothing of autograd.
"""
