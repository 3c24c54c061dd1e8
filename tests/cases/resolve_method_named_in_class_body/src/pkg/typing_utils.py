from typing import List


class DataSample:
    pass


SampleList = List[DataSample]
ConfigType = dict
